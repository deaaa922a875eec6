package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/BurntSushi/toml"
)

// Layer is one configuration file of the executor host, cut to the key
// paths a client asked for (environmentConfig/read, docs/protocol.md
// §6.14).
type Layer struct {
	Source  string // "user (<file>)" or "project (<file>)"
	BaseDir string // the folder of the file
	TOML    string // the cut document, written as the Codex CLI writes TOML
}

// Home returns $CODEX_HOME, which must be a folder, defaulting to
// ~/.codex (which need not exist); "" when neither is known.
func Home() (string, error) {
	if home := os.Getenv("CODEX_HOME"); home != "" {
		fi, err := os.Stat(home)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("CODEX_HOME points to %s, but that path does not exist", strconv.Quote(home))
		case err != nil:
			return "", fmt.Errorf("CODEX_HOME points to %s: %w", strconv.Quote(home), err)
		case !fi.IsDir():
			return "", fmt.Errorf("CODEX_HOME points to %s, but that path is not a directory", strconv.Quote(home))
		}
		return filepath.Abs(home)
	}
	if p := Path(); p != "" {
		return filepath.Dir(p), nil
	}
	return "", nil
}

// Layers are the configuration and requirement layers of the executor
// host, lowest precedence first. A cloud index is where layers fetched
// from the cloud would go: after the layers of SystemDir.
type Layers struct {
	Config, Requirements                     []Layer
	ConfigCloudIndex, RequirementsCloudIndex int
}

// SystemDir holds the host's system-wide files: config.toml (lowest
// precedence), managed_config.toml (highest) and requirements.toml.
var SystemDir = "/etc/codex"

// ReadLayers returns the layers that apply to cwd, each cut to its key
// paths; a layer that holds none of them is left out. The configuration
// layers are SystemDir/config.toml, the user's file in codexHome, then the
// `.codex/config.toml` of each folder from the project root down to cwd
// that the user's file trusts (`[projects."<dir>"] trust_level =
// "trusted"`, for the folder itself or else for the project root; an entry
// above the root is not inherited), then SystemDir/managed_config.toml. The
// requirement layer is SystemDir/requirements.toml. The project root is
// the nearest folder above cwd with a `.git` file or a `.git` repository
// folder, else cwd. A missing file is no layer; a file that is not TOML is
// an error.
func ReadLayers(codexHome, cwd string, configPaths, requirementsPaths [][]string) (Layers, error) {
	var out Layers
	reqFile := filepath.Join(SystemDir, "requirements.toml")
	doc, err := readOrdered(reqFile)
	var ce *Error
	switch {
	case errors.As(err, &ce) && ce.Line > 0:
		return out, fmt.Errorf("failed to parse requirements layer %s: %s", reqFile, err)
	case errors.As(err, &ce) && ce.Msg == notRegular:
		return out, fmt.Errorf("Failed to read requirements file %s: path `%s` is not a file", reqFile, reqFile)
	case errors.As(err, &ce):
		return out, fmt.Errorf("Failed to read requirements file %s: %s", reqFile, ce.Msg)
	case err != nil:
		return out, err
	}
	if doc != nil {
		if t := cut(doc, newSelection(requirementsPaths)); len(t.keys) > 0 {
			out.Requirements = append(out.Requirements, Layer{Source: reqFile, BaseDir: SystemDir, TOML: writeDocument(t)})
			out.RequirementsCloudIndex = len(out.Requirements)
		}
	}

	sel := newSelection(configPaths)
	add := func(source, file string, doc *table) {
		if t := cut(doc, sel); len(t.keys) > 0 {
			out.Config = append(out.Config, Layer{Source: fmt.Sprintf("%s (%s)", source, file), BaseDir: filepath.Dir(file), TOML: writeDocument(t)})
		}
	}
	sysFile := filepath.Join(SystemDir, FileName)
	if doc, err := readOrdered(sysFile); err != nil {
		return out, err
	} else if doc != nil {
		add("system", sysFile, doc)
	}
	out.ConfigCloudIndex = len(out.Config)
	var user *table
	if codexHome != "" {
		file := filepath.Join(codexHome, FileName)
		doc, err := readOrdered(file)
		if err != nil {
			return out, err
		}
		if doc != nil {
			user = doc
			add("user", file, doc)
		}
	}
	root := projectRoot(cwd)
	trust := projectTrust(user, root)
	var dirs []string
	for d := cwd; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if !trust(dirs[i]) {
			continue
		}
		file := filepath.Join(dirs[i], ".codex", FileName)
		doc, err := readOrdered(file)
		if errors.As(err, &ce) && ce.Line > 0 {
			return out, fmt.Errorf("Error parsing project config file %s: %s", file, err)
		}
		if err != nil {
			return out, err
		}
		if doc != nil {
			add("project", file, doc)
		}
	}
	managed := filepath.Join(SystemDir, "managed_config.toml")
	if doc, err := readOrdered(managed); err != nil {
		return out, err
	} else if doc != nil {
		add("legacy managed_config.toml", managed, doc)
	}
	return out, nil
}

// maxLayerBytes bounds a configuration file read for a client: a project's
// file may be written by a sandboxed command.
const maxLayerBytes = 8 << 20

const notRegular = "not a regular file"

// readOrdered reads a TOML file in file order; nil when it does not exist.
// Only a regular file of at most maxLayerBytes is read, and opening it
// never blocks (a FIFO put in its place must not hang the server).
func readOrdered(file string) (*table, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	case err != nil:
		return nil, &Error{File: file, Msg: err.Error()}
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, &Error{File: file, Msg: err.Error()}
	case !fi.Mode().IsRegular():
		return nil, &Error{File: file, Msg: notRegular}
	case fi.Size() > maxLayerBytes:
		return nil, &Error{File: file, Msg: fmt.Sprintf("larger than %d bytes", maxLayerBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLayerBytes+1))
	switch {
	case err != nil:
		return nil, &Error{File: file, Msg: err.Error()}
	case len(data) > maxLayerBytes:
		return nil, &Error{File: file, Msg: fmt.Sprintf("larger than %d bytes", maxLayerBytes)}
	}
	doc, err := decodeOrdered(string(data))
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: file, Line: pe.Position.Line, Col: pe.Position.Col, Msg: pe.Message}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return doc, nil
}

// projectTrust returns whether a folder of the project at root is trusted
// by the user's `projects` table: the folder's own entry decides, else the
// project root's. Entries above the root are not inherited. A folder is
// looked up by its path as given, then with its symbolic links resolved.
func projectTrust(user *table, root string) func(dir string) bool {
	levels := map[string]string{}
	if user != nil {
		if projects, ok := user.vals["projects"].(*table); ok {
			for _, k := range projects.keys {
				if p, ok := projects.vals[k].(*table); ok {
					level, _ := p.vals["trust_level"].(string)
					levels[filepath.Clean(k)] = level
				}
			}
		}
	}
	lookup := func(dir string) (string, bool) {
		if level, ok := levels[dir]; ok {
			return level, true
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			level, ok := levels[real]
			return level, ok
		}
		return "", false
	}
	return func(dir string) bool {
		level, ok := lookup(dir)
		if !ok {
			level, _ = lookup(root)
		}
		return level == "trusted"
	}
}

// projectRoot is the nearest folder at or above cwd that holds a `.git`
// file or a `.git` folder with a HEAD (an empty `.git` folder is not a
// repository); cwd when there is none.
func projectRoot(cwd string) string {
	for d := cwd; ; d = filepath.Dir(d) {
		git := filepath.Join(d, ".git")
		if fi, err := os.Stat(git); err == nil {
			if !fi.IsDir() {
				return d
			}
			if _, err := os.Stat(filepath.Join(git, "HEAD")); err == nil {
				return d
			}
		}
		if d == filepath.Dir(d) {
			return cwd
		}
	}
}
