// Package deploy holds the deployment files of the exec-server (a systemd
// unit, a container recipe and a Kubernetes example; see README.md) and
// the tests that check them. It has no code.
package deploy
