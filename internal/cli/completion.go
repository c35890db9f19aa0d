package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockctl/lockctl/verdict"
	"github.com/urfave/cli/v2"
)

// The shells lockctl completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

func completionCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `The script completes commands, their options, the values of --format and
--fail-on, and file names. Load it for this shell, or install it:

  bash:  source <(lockctl completion bash)
         lockctl completion bash > ~/.local/share/bash-completion/completions/lockctl
  zsh:   lockctl completion zsh > "${fpath[1]}/_lockctl"
  fish:  lockctl completion fish > ~/.config/fish/completions/lockctl.fish`,
		OnUsageError: onUsage,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("completion: name one shell: %s", strings.Join(shells, ", "))
			}
			cmds := describeCommands(c.App)
			w := c.App.Writer
			var err error
			switch sh := c.Args().First(); sh {
			case "bash":
				err = writeBashCompletion(w, cmds)
			case "zsh":
				err = writeZshCompletion(w, cmds)
			case "fish":
				err = writeFishCompletion(w, cmds)
			default:
				return usageErr("completion: %q is not a shell lockctl knows (want %s)", sh, strings.Join(shells, ", "))
			}
			if err != nil {
				return &exitCode{code: ExitError, err: fmt.Errorf("cannot write the script: %w", err)}
			}
			return nil
		},
	}
}

// cmdDoc is one visible command as completion scripts and the man page see
// it, read from its cli.Command.
type cmdDoc struct {
	names       []string // the name, then aliases
	usage       string
	argsUsage   string
	description string
	flags       []flagDoc
	// args are the words a positional argument can be; nil with
	// fileArgs means file names, nil without it means nothing.
	args     []string
	fileArgs bool
}

// flagDoc is one flag of a command.
type flagDoc struct {
	names       []string // without dashes, the long name first
	usage       string   // with the `PLACEHOLDER` quotes removed
	placeholder string   // "" for a flag that takes no value
	def         string   // the default value, "" when there is none worth saying
	repeatable  bool
	file        bool     // the value is a file name
	values      []string // the words the value can be, if it is one of a set
	list        bool     // the value is a comma-separated list of values
}

// flagValues are the value sets of flags that have one, by flag name.
var flagValues = map[string]struct {
	values []string
	list   bool
}{
	"format":  {values: formats},
	"fail-on": {values: append(verdictNames(), "none"), list: true},
	"only":    {values: verdictNames(), list: true},
}

func verdictNames() []string {
	s := make([]string, len(verdict.All))
	for i, v := range verdict.All {
		s[i] = string(v)
	}
	return s
}

// describeCommands reads the app's visible commands, in order; hidden ones
// (__gate) are left out, and so is the --help every command has. The app
// must have been set up (app.Run has started), which adds the help command.
func describeCommands(app *cli.App) []cmdDoc {
	var cmds []cmdDoc
	names := commandNames(app)
	for _, c := range app.VisibleCommands() {
		d := cmdDoc{names: c.Names(), usage: c.Usage, argsUsage: c.ArgsUsage, description: c.Description}
		switch c.Name {
		case "completion":
			d.args = shells
		case "help":
			d.args = names
		default:
			d.fileArgs = c.ArgsUsage != ""
		}
		for _, f := range c.VisibleFlags() {
			// --help is added only to the command being run: leave it
			// out everywhere, so the result does not depend on which.
			if f != cli.HelpFlag {
				d.flags = append(d.flags, describeFlag(f))
			}
		}
		cmds = append(cmds, d)
	}
	return cmds
}

func commandNames(app *cli.App) []string {
	var s []string
	for _, c := range app.VisibleCommands() {
		s = append(s, c.Name)
	}
	return s
}

func describeFlag(f cli.Flag) flagDoc {
	d := flagDoc{names: f.Names()}
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return d
	}
	d.usage = df.GetUsage()
	if i := strings.IndexByte(d.usage, '`'); i >= 0 {
		if j := strings.IndexByte(d.usage[i+1:], '`'); j >= 0 {
			d.placeholder = d.usage[i+1 : i+1+j]
			d.usage = d.usage[:i] + d.placeholder + d.usage[i+1+j+1:]
		}
	}
	if !df.TakesValue() {
		d.placeholder = ""
		return d
	}
	if d.placeholder == "" {
		d.placeholder = "value"
	}
	if sf, ok := f.(cli.DocGenerationSliceFlag); ok {
		d.repeatable = sf.IsSliceFlag()
	}
	switch t := f.(type) {
	case *cli.StringFlag:
		d.def, d.file = t.Value, t.TakesFile
	case *cli.PathFlag:
		d.def, d.file = t.Value, true
	default:
		if s := df.GetDefaultText(); s != "0s" && s != "0" && s != `""` {
			d.def = s
		}
	}
	if v, ok := flagValues[d.names[0]]; ok {
		d.values, d.list = v.values, v.list
	}
	return d
}

// dashed is a flag name as typed: -h, --format.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// shellWords joins words for a single-quoted shell string; the words are
// command, flag and value names, which hold no quote.
func shellWords(words []string) string { return strings.Join(words, " ") }

// singleQuote quotes s for sh, bash, zsh (inside '...').
func singleQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeBashCompletion(w io.Writer, cmds []cmdDoc) error {
	var b strings.Builder
	b.WriteString(bashHead)
	var names []string
	for _, c := range cmds {
		names = append(names, c.names[0])
	}
	fmt.Fprintf(&b, "\t\t\t_lockctl_reply %s\n\t\tfi\n\t\t;;\n", singleQuote(shellWords(names)))
	for _, c := range cmds {
		writeBashCommand(&b, c)
	}
	b.WriteString(`	esac
	return 0
}

complete -o default -F _lockctl lockctl
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// bashHead is the bash script up to the cases of the commands.
const bashHead = `# bash completion for lockctl, generated by 'lockctl completion bash'.
# Load it with: source <(lockctl completion bash)

# _lockctl_reply WORDS [LIST]: complete $cur from WORDS; with LIST set,
# $cur is a comma-separated list and its last element is completed.
_lockctl_reply() {
	local pre='' last=$cur
	if [[ -n ${2-} && $cur == *,* ]]; then
		pre=${cur%,*},
		last=${cur##*,}
	fi
	local w
	COMPREPLY=()
	for w in $(compgen -W "$1" -- "$last"); do
		COMPREPLY+=("$pre$w")
	done
	[[ -n ${2-} ]] && compopt -o nospace 2>/dev/null
	return 0
}

_lockctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev='' cmd='' i
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# With = in COMP_WORDBREAKS, --format=x arrives as --format, =, x.
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	COMPREPLY=()
	# After run's --, the words are CMD's: complete them as a command line.
	if [[ $cmd == run ]]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == -- ]] || continue
			if declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			elif ((COMP_CWORD == i + 1)); then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
			fi
			return 0
		done
	fi
	case $cmd in
	'')
		if [[ $cur == -* ]]; then
			_lockctl_reply '--help -h'
		else
`

// writeBashCommand writes the case of command c: its flags, their values,
// and its arguments.
func writeBashCommand(b *strings.Builder, c cmdDoc) {
	fmt.Fprintf(b, "\t%s)\n", strings.Join(c.names, "|"))
	flags, empty := []string{"--help", "-h"}, []string(nil)
	for _, f := range c.flags {
		for _, n := range f.names {
			flags = append(flags, dashed(n))
		}
		if f.placeholder == "" {
			continue
		}
		if f.values != nil {
			list := ""
			if f.list {
				list = "list"
			}
			fmt.Fprintf(b, "\t\tcase $prev in %s) _lockctl_reply %s %s; return ;; esac\n",
				dashedAlts(f.names), singleQuote(shellWords(f.values)), singleQuote(list))
			continue
		}
		for _, n := range f.names {
			empty = append(empty, dashed(n))
		}
	}
	if len(empty) > 0 {
		b.WriteString("\t\t# A value with no set of its own: file names (complete -o default).\n")
		fmt.Fprintf(b, "\t\tcase $prev in %s) return ;; esac\n", strings.Join(empty, "|"))
	}
	fmt.Fprintf(b, "\t\tif [[ $cur == -* ]]; then\n\t\t\t_lockctl_reply %s\n", singleQuote(shellWords(flags)))
	if c.args != nil {
		fmt.Fprintf(b, "\t\telse\n\t\t\t_lockctl_reply %s\n", singleQuote(shellWords(c.args)))
	}
	b.WriteString("\t\tfi\n\t\t;;\n")
}

// argWord names a command's first argument for zsh's message: "[PATH...]"
// is "path".
func argWord(argsUsage string) string {
	f := strings.Fields(strings.Trim(argsUsage, "[]. "))
	if len(f) == 0 {
		return "file"
	}
	return strings.ToLower(strings.Trim(f[0], "[]."))
}

func dashedAlts(names []string) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = dashed(n)
	}
	return strings.Join(s, "|")
}

// zshDesc escapes a description for _arguments' [...].
func zshDesc(s string) string {
	return strings.NewReplacer(`\`, `\\`, `]`, `\]`).Replace(s)
}

func writeZshCompletion(w io.Writer, cmds []cmdDoc) error {
	var b strings.Builder
	b.WriteString(`#compdef lockctl
# zsh completion for lockctl, generated by 'lockctl completion zsh'.
# Install it as _lockctl in a directory of $fpath, then run compinit.

_lockctl() {
	local curcontext=$curcontext state line ret=1
	typeset -A opt_args
	_arguments -C '(- :)'{-h,--help}'[show help]' '1: :->command' '*:: :->argument' && ret=0
	case $state in
	command)
		local -a commands
		commands=(
`)
	for _, c := range cmds {
		// _describe splits NAME:DESCRIPTION at the first colon.
		fmt.Fprintf(&b, "\t\t\t%s\n", singleQuote(c.names[0]+":"+c.usage))
	}
	b.WriteString(`		)
		_describe -t commands 'lockctl command' commands && ret=0
		;;
	argument)
		curcontext=${curcontext%:*:*}:lockctl-$words[1]:
		case $words[1] in
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t_arguments -s -S \\\n", strings.Join(c.names, "|"))
		b.WriteString("\t\t\t\t'(- *)'{-h,--help}'[show help]' \\\n")
		for _, f := range c.flags {
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", zshSpec(f))
		}
		switch {
		case c.args != nil:
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", singleQuote("*:argument:("+shellWords(c.args)+")"))
		case c.fileArgs:
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", singleQuote("*:"+argWord(c.argsUsage)+":_files"))
		}
		b.WriteString("\t\t\t\t&& ret=0\n\t\t\t;;\n")
	}
	b.WriteString(`		esac
		;;
	esac
	return ret
}

# Autoloaded from $fpath, this file is the body of _lockctl: define the
# function and run it. Sourced, register it.
if [[ $funcstack[1] == _lockctl ]]; then
	_lockctl "$@"
else
	compdef _lockctl lockctl
fi
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote quotes s for fish (inside '...', only \ and ' are special).
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// zshSpec is the _arguments spec of flag f, quoted for the shell.
func zshSpec(f flagDoc) string {
	var spec string
	names := make([]string, len(f.names))
	for i, n := range f.names {
		names[i] = dashed(n)
	}
	star := ""
	if f.repeatable {
		star = "*"
	}
	eq := ""
	if f.placeholder != "" {
		eq = "="
	}
	desc := "[" + zshDesc(f.usage) + "]"
	if len(names) == 1 {
		spec = star + names[0] + eq + desc
	} else {
		spec = "(" + strings.Join(names, " ") + ")" + star + "{" + strings.Join(names, ",") + "}" + eq + desc
	}
	if f.placeholder != "" {
		action := " "
		switch {
		case f.values != nil && f.list:
			action = "_sequence compadd - " + shellWords(f.values)
		case f.values != nil:
			action = "(" + shellWords(f.values) + ")"
		case f.file:
			action = "_files"
		}
		spec += ":" + f.placeholder + ":" + action
	}
	if len(names) == 1 {
		return singleQuote(spec)
	}
	// The {a,b} brace expansion must stay outside the quotes.
	i := strings.Index(spec, "{")
	j := strings.Index(spec, "}")
	return singleQuote(spec[:i]) + spec[i:j+1] + singleQuote(spec[j+1:])
}

func writeFishCompletion(w io.Writer, cmds []cmdDoc) error {
	var b strings.Builder
	b.WriteString(`# fish completion for lockctl, generated by 'lockctl completion fish'.
# Install it as ~/.config/fish/completions/lockctl.fish.

complete -c lockctl -f
complete -c lockctl -n __fish_use_subcommand -s h -l help -d 'show help'
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c lockctl -n __fish_use_subcommand -a %s -d %s\n", c.names[0], fishQuote(c.usage))
	}
	for _, c := range cmds {
		cond := fishQuote("__fish_seen_subcommand_from " + strings.Join(c.names, " "))
		fmt.Fprintf(&b, "complete -c lockctl -n %s -s h -l help -d 'show help'\n", cond)
		for _, f := range c.flags {
			var opts []string
			for _, n := range f.names {
				if len(n) == 1 {
					opts = append(opts, "-s "+n)
				} else {
					opts = append(opts, "-l "+n)
				}
			}
			switch {
			case f.placeholder == "":
			case f.values != nil:
				opts = append(opts, "-x -a "+fishQuote(shellWords(f.values)))
			case f.file:
				opts = append(opts, "-r -F")
			default:
				opts = append(opts, "-x")
			}
			fmt.Fprintf(&b, "complete -c lockctl -n %s %s -d %s\n", cond, strings.Join(opts, " "), fishQuote(f.usage))
		}
		switch {
		case c.args != nil:
			fmt.Fprintf(&b, "complete -c lockctl -n %s -a %s\n", cond, fishQuote(shellWords(c.args)))
		case c.fileArgs:
			fmt.Fprintf(&b, "complete -c lockctl -n %s -F\n", cond)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
