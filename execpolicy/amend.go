package execpolicy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultRulesFile is the file amendments go to, under $CODEX_HOME.
const DefaultRulesFile = "rules/default.rules"

// AppendAllowPrefix records an "always allow" approval: it appends
//
//	prefix_rule(pattern=["echo", "hello"], decision="allow")
//
// to $codexHome/rules/default.rules (creating the folder and the file,
// adding a newline first when the file does not end with one, doing
// nothing to the file when the line is already there), under an exclusive
// flock so concurrent writers do not interleave; then adds the same rule to
// p. An empty prefix is an error, as is any I/O failure (p is then left
// unchanged).
func (p *Policy) AppendAllowPrefix(codexHome string, prefix []string) error {
	if len(prefix) == 0 {
		return errors.New("prefix rule requires at least one token")
	}
	if p == nil {
		return errors.New("no policy to amend")
	}
	line, err := allowPrefixLine(prefix)
	if err != nil {
		return err
	}
	path := filepath.Join(codexHome, DefaultRulesFile)
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("failed to create policy directory %s: %w", filepath.Dir(path), err)
	}
	if err := appendLineLocked(path, line); err != nil {
		return err
	}
	rest := make([]Token, len(prefix)-1)
	for i, t := range prefix[1:] {
		rest[i] = Token{Alts: []string{t}}
	}
	p.mu.Lock()
	p.addRule(&PrefixRule{Program: prefix[0], Rest: rest, Decision: Allow})
	p.mu.Unlock()
	return nil
}

// allowPrefixLine renders the rule; tokens are JSON strings, which
// Starlark reads back as the same strings.
func allowPrefixLine(prefix []string) (string, error) {
	toks := make([]string, len(prefix))
	for i, t := range prefix {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return "", fmt.Errorf("failed to format prefix tokens: %w", err)
		}
		toks[i] = strings.TrimSuffix(b.String(), "\n")
	}
	return fmt.Sprintf(`prefix_rule(pattern=[%s], decision="allow")`, strings.Join(toks, ", ")), nil
}

func appendLineLocked(path, line string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("failed to open policy file %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("failed to lock policy file %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("failed to read policy file %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		if strings.TrimSuffix(sc.Text(), "\r") == line {
			return nil
		}
	}
	out := line + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		out = "\n" + out
	}
	if _, err := f.WriteString(out); err != nil {
		return fmt.Errorf("failed to write to policy file %s: %w", path, err)
	}
	return f.Close()
}
