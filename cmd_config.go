package main

import (
	"os"

	"github.com/codexec/codex/config"
	"go.uber.org/zap"
)

// loadPermissions reads the permission profiles of $CODEX_HOME/config.toml
// (command/exec resolves profile names against them). A missing file
// means the defaults; an invalid one is an error: the server must not run
// with other permissions than its operator wrote.
func loadPermissions(logger *zap.Logger) (*config.Permissions, error) {
	path := config.Path()
	perms, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	for _, w := range perms.Warnings {
		logger.Warn("configuration", zap.String("warning", w))
	}
	if cwd, err := os.Getwd(); err == nil {
		if _, err := perms.Resolve(perms.DefaultName(), cwd); err != nil {
			logger.Warn("configuration: the default permissions cannot be used in the server's cwd; every command/exec will be refused", zap.String("cwd", cwd), zap.Error(err))
		}
	}
	logger.Debug("permissions", zap.String("file", path), zap.String("default", perms.DefaultName()))
	return perms, nil
}
