//go:build !linux

package sandbox

import "os"

// openScanRoot opens a glob's search root.
func openScanRoot(path string) (*os.File, error) { return os.Open(path) }
