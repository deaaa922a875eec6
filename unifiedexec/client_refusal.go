package unifiedexec

import (
	"io"
	"net/http"
	"strings"
)

// refusalBody reads and closes the body of a refused WebSocket upgrade
// (such as a 401 and its reason) and returns it as ": <text>", the first
// line and at most 512 bytes; "" when there is none.
func refusalBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if text == "" {
		return ""
	}
	return ": " + text
}
