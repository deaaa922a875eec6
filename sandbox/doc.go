// Package sandbox holds the sandbox policy model and its Linux enforcement.
//
// So far it holds only the pure denial heuristic (LikelyDenied) shared by the
// server and the client layer; policy parsing and the re-executed helper
// come with the sandbox issue. The server process itself is never
// restricted: enforcement happens only in re-executed children.
package sandbox
