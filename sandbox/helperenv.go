//go:build !race

package sandbox

// helperEnv is the helper's own environment: empty (the command's travels
// in the plan).
func helperEnv() []string { return []string{} }
