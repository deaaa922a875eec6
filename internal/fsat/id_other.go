//go:build !unix

package fsat

import "errors"

// Lstat is not supported on this platform.
func Lstat(path string) (ID, error) {
	return ID{}, errors.New("fsat: no file identities on this platform")
}
