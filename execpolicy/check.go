package execpolicy

import (
	"fmt"
	"io"
	"strings"
)

// CheckUsage is the synopsis of `codex execpolicy check`.
const CheckUsage = "codex execpolicy check [OPTIONS] --rules <PATH> <COMMAND>..."

const checkHelp = `Evaluate a command against .rules files and print the matching rules as JSON

Usage: ` + CheckUsage + `

Arguments:
  <COMMAND>...
          The command to evaluate, one token per argument; everything from the
          first token on belongs to the command, even words that look like options

Options:
  -r, --rules <PATH>
          A .rules file to load (repeatable; files load in the order given)

      --pretty
          Indent the JSON output

      --resolve-host-executables
          Let an absolute program path that no rule names match the rules of its
          basename, restricted to the paths of host_executable() when there is one

  -h, --help
          Print this help
`

// checkArgs is the parsed command line of `codex execpolicy check`.
type checkArgs struct {
	rules      []string
	pretty     bool
	resolve    bool
	help       bool
	command    []string
	prettySet  bool
	resolveSet bool
	// used lists the switches given, in order, for the usage line of
	// errors.
	used []string
}

// usage is the synopsis the reference prints in an error: the required
// arguments with the switches that were given.
func (a *checkArgs) usage() string {
	s := "codex execpolicy check --rules <PATH>"
	for _, u := range a.used {
		s += " " + u
	}
	return s + " <COMMAND>..."
}

// isFlagToken reports whether arg is one of the reference's option names,
// which it never takes as the value of --rules.
func isFlagToken(arg string) bool {
	switch arg {
	case "--", "-h", "--help", "-r", "--rules", "--pretty", "--resolve-host-executables",
		"-c", "--config", "--enable", "--disable":
		return true
	}
	return false
}

// usageError is a command-line error, printed as the reference prints it,
// with exit code 2.
type usageError struct{ text string }

func (e *usageError) Error() string { return e.text }

func usageErr(msg, usage string) error {
	s := "error: " + msg + "\n\n"
	if usage != "" {
		s += "Usage: " + usage + "\n\n"
	}
	return &usageError{s + "For more information, try '--help'.\n"}
}

// parseCheckArgs parses the arguments after `check` like the reference:
// options until the first other word (or after "--"), which starts the
// command; an unknown option-looking word also starts it.
func parseCheckArgs(args []string) (checkArgs, error) {
	var a checkArgs
	i := 0
loop:
	for ; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "--") {
			name, hasValue = arg, false
		}
		switch name {
		case "--":
			i++
			break loop
		case "-h", "--help":
			a.help = true
			return a, nil
		case "-r", "--rules":
			if !hasValue {
				if i+1 >= len(args) || isFlagToken(args[i+1]) {
					value = ""
				} else {
					i++
					value = args[i]
				}
			}
			if value == "" {
				return a, usageErr("a value is required for '--rules <PATH>' but none was supplied", "")
			}
			a.rules = append(a.rules, value)
		case "--pretty", "--resolve-host-executables":
			set := &a.prettySet
			if name != "--pretty" {
				set = &a.resolveSet
			}
			if *set {
				return a, usageErr(fmt.Sprintf("the argument '%s' cannot be used multiple times", name), CheckUsage)
			}
			*set = true
			a.used = append(a.used, name)
			if hasValue {
				return a, usageErr(fmt.Sprintf("unexpected value '%s' for '%s' found; no more were expected", value, name),
					a.usage())
			}
		default:
			break loop
		}
	}
	a.pretty, a.resolve = a.prettySet, a.resolveSet
	a.command = args[i:]
	var missing []string
	if len(a.rules) == 0 {
		missing = append(missing, "  --rules <PATH>")
	}
	if len(a.command) == 0 {
		missing = append(missing, "  <COMMAND>...")
	}
	if len(missing) > 0 {
		return a, usageErr("the following required arguments were not provided:\n"+strings.Join(missing, "\n"),
			a.usage())
	}
	return a, nil
}

// RunCheck is `codex execpolicy check`: it loads the --rules files, matches
// the command and prints {"matchedRules":[…],"decision":…} (no decision
// when nothing matched) on stdout. It returns the exit code: 0, 1 for a
// rules file that cannot be read or loaded ("Error: …" / "Caused by:" on
// stderr), 2 for a bad command line.
func RunCheck(args []string, stdout, stderr io.Writer) int {
	a, err := parseCheckArgs(args)
	if err != nil {
		io.WriteString(stderr, err.Error())
		return 2
	}
	if a.help {
		io.WriteString(stdout, checkHelp)
		return 0
	}
	p, err := LoadFiles(a.rules...)
	if err != nil {
		fmt.Fprint(stderr, renderLoadError(err))
		return 1
	}
	ms := p.Matches(a.command, MatchOptions{ResolveHostExecutables: a.resolve})
	io.WriteString(stdout, checkJSON(ms, a.pretty)+"\n")
	return 0
}

// renderLoadError prints err as "Error: CONTEXT", a blank line, "Caused
// by:" and the cause indented by four spaces.
func renderLoadError(err error) string {
	fe, ok := err.(*FileError)
	if !ok {
		return "Error: " + err.Error() + "\n"
	}
	cause := strings.ReplaceAll(fe.Cause(), "\n", "\n    ")
	return "Error: " + fe.Context() + "\n\nCaused by:\n    " + cause + "\n"
}
