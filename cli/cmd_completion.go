package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionCommand is `codex completion bash|zsh|fish`: a completion
// script on stdout. The bash and zsh scripts ask the binary itself for the
// candidates at each Tab (urfave/cli's --generate-bash-completion, on in
// newApp); the fish script is generated from the command tree.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes codex's commands and flags. Load it with:

  bash:  source <(codex completion bash)        (or save it in /etc/bash_completion.d/codex)
  zsh:   source <(codex completion zsh)         (after compinit)
  fish:  codex completion fish | source         (or save it in ~/.config/fish/completions/codex.fish)`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf(c, "expected one shell: bash, zsh or fish")
			}
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return cli.Exit("completion: "+err.Error(), 1)
				}
				script = tidyFish(s)
			default:
				return usageErrorf(c, "unsupported shell %q; expected bash, zsh or fish", shell)
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// bashCompletion completes the word under the cursor from the candidates
// the binary prints for the words before it.
const bashCompletion = `# bash completion for codex; load with: source <(codex completion bash)
_codex_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a ask=("${COMP_WORDS[@]:0:COMP_CWORD}")
  [[ $cur == -* ]] && ask+=("$cur")
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$("${ask[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _codex_complete codex
`

// zshCompletion is the same for zsh; files when the binary offers nothing.
const zshCompletion = `#compdef codex
# zsh completion for codex; load with: source <(codex completion zsh)
_codex_complete() {
  local cur=${words[CURRENT]}
  local -a ask=("${(@)words[1,CURRENT-1]}")
  [[ $cur == -* ]] && ask+=("$cur")
  local -a cands=("${(@f)$("${ask[@]}" --generate-bash-completion 2>/dev/null)}")
  if [[ -n ${cands[1]} ]]; then
    compadd -- "${cands[@]}"
  else
    _files
  fi
}
compdef _codex_complete codex
`

// tidyFish drops the repeated lines of urfave/cli's fish script (it lists
// the root's --help and --version twice) and the backticks that mark
// placeholders in flag usages.
func tidyFish(script string) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, line := range strings.SplitAfter(script, "\n") {
		if strings.HasPrefix(line, "complete ") {
			if seen[line] {
				continue
			}
			seen[line] = true
		}
		b.WriteString(line)
	}
	return strings.ReplaceAll(b.String(), "`", "")
}
