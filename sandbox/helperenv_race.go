//go:build race

package sandbox

import "os"

// helperEnv is the helper's own environment. In a race-detector build
// (tests only) it carries the parent's GORACE, so that a test can turn off
// the detector's one-second sleep at the exit of every helper process;
// release builds give the helper an empty environment.
func helperEnv() []string {
	if v, ok := os.LookupEnv("GORACE"); ok {
		return []string{"GORACE=" + v}
	}
	return []string{}
}
