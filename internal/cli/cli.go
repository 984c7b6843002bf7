// Package cli is the plumbing shared by the tracksum commands: flag sets with --help and --config,
// config resolution through one viper instance per command, Ctrl-C handling and exit codes. It keeps
// each cmd/<name>/main.go down to a few lines.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/progress"
)

// ErrUsage marks a mistake in the command line; Main prints the usage after it and exits 2.
var ErrUsage = errors.New("usage")

// Command describes one tracksum command.
type Command struct {
	// Name is the binary's name, e.g. "tracksum-prepare".
	Name string
	// Synopsis is one line of usage, e.g. "--input FILE[,FILE...] --out DIR [flags]".
	Synopsis string
	// Description is a paragraph shown by --help above the flags.
	Description string
	// Flags holds the command's own flags; Main adds --config and --help.
	Flags *pflag.FlagSet
	// Run does the work. ctx is cancelled on SIGINT/SIGTERM so that long work can stop cleanly
	// (training saves a checkpoint first).
	Run func(ctx context.Context, args []string) error
	// Subcommands are run instead when the first argument is their last word (e.g. the Name
	// "tracksum-eval compare" is run by "tracksum-eval compare ..."); each parses its own flags.
	Subcommands []Command
}

// NewFlags returns an empty flag set for a command, with the config flags every command shares
// already defined: --config, --set and --print-config.
func NewFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.String("config", "", "YAML config profile (e.g. configs/tiny.yaml); built-in defaults when empty")
	addConfigFlags(fs)
	return fs
}

// addConfigFlags defines --set and --print-config next to --config.
func addConfigFlags(fs *pflag.FlagSet) {
	if fs.Lookup("set") == nil {
		fs.StringArray("set", nil, "set any config key, above every other layer: --set tracker.train.learning_rate=2e-5 (repeatable)")
	}
	if fs.Lookup("print-config") == nil {
		var mode printMode
		f := fs.VarPF(&mode, "print-config", "", "print the resolved config (every key by section, the task's and this command's first, with where its value came from: default, file, env, flag, set) and exit; --print-config=changed: only the keys that are not at their defaults")
		f.NoOptDefVal = printAll
	}
}

// The values of --print-config: a bare --print-config prints every key.
const (
	printAll     = "all"
	printChanged = "changed"
)

// printMode is --print-config's value: "" (do not print), printAll or printChanged.
type printMode string

func (m *printMode) String() string { return string(*m) }

// Type is empty so that --help shows the flag as --print-config[=all], its usage naming =changed.
func (m *printMode) Type() string { return "" }

// Set accepts all and changed, and the boolean spellings a bool flag took (true is all).
func (m *printMode) Set(s string) error {
	switch strings.ToLower(s) {
	case printAll, "true", "1":
		*m = printAll
	case printChanged:
		*m = printChanged
	case "false", "0", "":
		*m = ""
	default:
		return fmt.Errorf("want all or changed, got %q", s)
	}
	return nil
}

// errConfigPrinted ends a command after --print-config: Main exits 0 without running it.
var errConfigPrinted = errors.New("config printed")

// Unbound are the flags bound to no config key: the config flags themselves and the plumbing Main
// adds to every command (--quiet, --version, --help). Every other flag of a command is bound to a
// key in the map given to LoadConfig.
var Unbound = []string{"config", "set", "print-config", "quiet", "version", "help"}

// LoadConfig resolves the configuration for a command whose flags were parsed: --config file, then
// TRACKSUM_* environment variables, then the flags named in flagKeys (flag name -> dotted config
// key), then --set. It is the one place where flags meet config keys, and it applies only the
// flags actually given on the command line: a flag left out never overrides the profile or the
// environment with its default, so flag defaults are documentation only (the config's default is
// the flag's). A command reads its settings from the result only, never from its flags.
//
// Every flag of fs but Unbound must be in flagKeys, and every flagKeys name in fs: either mistake
// is an error (a programming mistake caught by the commands' tests), so that a flag cannot be read
// past the configuration.
func LoadConfig(fs *pflag.FlagSet, flagKeys map[string]string) (*config.Config, error) {
	return LoadTaskConfig(fs, flagKeys, "")
}

// LoadTaskConfig is LoadConfig for a command that trains a task whose config section is section
// (tracksum-train's --task: tracker or summarizer): the Hugging Face names of config.HFNames in
// --set and the profile become that section's keys (a note on stderr says which), "did you mean"
// prefers its keys, and --print-config prints it first.
func LoadTaskConfig(fs *pflag.FlagSet, flagKeys map[string]string, section string) (*config.Config, error) {
	cfg, _, err := LoadTaskConfigSources(fs, flagKeys, section)
	return cfg, err
}

// LoadTaskConfigSources is LoadTaskConfig, also returning where each key's value came from (as
// --print-config shows it): for a command that tells the keys a user gave from the defaults.
func LoadTaskConfigSources(fs *pflag.FlagSet, flagKeys map[string]string, section string) (*config.Config, map[string]config.Source, error) {
	if err := CheckBound(fs, flagKeys); err != nil {
		return nil, nil, err
	}
	cfg, src, err := resolveConfig(fs, flagKeys, config.Scope{Section: section, Notes: stderr})
	if err != nil {
		return nil, nil, err
	}
	if f := fs.Lookup("print-config"); f != nil && f.Value.String() != "" {
		opts := config.PrintOptions{First: printFirst(section, flagKeys), Changed: f.Value.String() == printChanged}
		if err := config.WriteResolvedIn(stdout, cfg, src, opts); err != nil {
			return nil, nil, err
		}
		return nil, nil, errConfigPrinted
	}
	return cfg, src, nil
}

// printFirst lists the sections --print-config puts first: the task's, then those of the keys the
// command's flags are bound to ("" for top-level keys such as seed), in config order.
func printFirst(section string, flagKeys map[string]string) []string {
	own := map[string]bool{}
	for _, key := range flagKeys {
		s, _, nested := strings.Cut(key, ".")
		if !nested {
			s = ""
		}
		own[s] = true
	}
	var first []string
	if section != "" {
		first = append(first, section)
	}
	for _, s := range config.SectionOrder() {
		if own[s] && s != section {
			first = append(first, s)
		}
	}
	return first
}

// Peek resolves the configuration as LoadConfig does, without printing it and without checking
// that every flag is bound: for a command whose bindings depend on a setting (tracksum-train binds
// its loop flags to the section of train.task), which reads that setting here and then calls
// LoadTaskConfig with the whole map. Hugging Face names and unknown keys of --set and the profile
// are left for that second call, which knows the task.
func Peek(fs *pflag.FlagSet, flagKeys map[string]string) (*config.Config, error) {
	cfg, _, err := resolveConfig(fs, flagKeys, config.Scope{Partial: true})
	return cfg, err
}

// CheckBound reports a flag of fs that flagKeys binds to no config key (Unbound aside), or a
// flagKeys name that fs does not define.
func CheckBound(fs *pflag.FlagSet, flagKeys map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(flagKeys)) {
		if fs.Lookup(name) == nil {
			return fmt.Errorf("config: flag --%s bound to %q is not defined", name, flagKeys[name])
		}
	}
	var unbound []string
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := flagKeys[f.Name]; !ok && !slices.Contains(Unbound, f.Name) {
			unbound = append(unbound, "--"+f.Name)
		}
	})
	if len(unbound) > 0 {
		return fmt.Errorf("config: %s: flags bound to no config key (%s)", fs.Name(), strings.Join(unbound, ", "))
	}
	return nil
}

// resolveConfig loads the configuration of fs's --config, --set and the given flags of flagKeys.
func resolveConfig(fs *pflag.FlagSet, flagKeys map[string]string, scope config.Scope) (*config.Config, map[string]config.Source, error) {
	given := map[string]string{}
	for name, key := range flagKeys {
		if fs.Lookup(name) == nil {
			return nil, nil, fmt.Errorf("config: flag --%s bound to %q is not defined", name, key)
		}
		if fs.Changed(name) {
			given[name] = key
		}
	}
	file, _ := fs.GetString("config")
	var sets []config.Setting
	if fs.Lookup("set") != nil {
		args, _ := fs.GetStringArray("set")
		var err error
		if sets, err = config.ParseSettingsIn(args, scope); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
	}
	return config.LoadIn(viper.New(), file, fs, given, sets, scope)
}

// stdout is where --print-config and --version write (a variable for the tests).
var stdout io.Writer = os.Stdout

// stderr is where the notes on Hugging Face names go (a variable for the tests).
var stderr io.Writer = os.Stderr

// Main parses the command line, runs the command and exits: 0 on success, 2 on a usage error, 1 on
// any other error, 130 when interrupted by SIGINT (Ctrl-C) and 143 by SIGTERM (128 + the signal's
// number, the shell convention). Errors are printed as one line prefixed by the command name.
func Main(cmd Command) {
	os.Exit(run(cmd, os.Args[1:]))
}

func run(cmd Command, args []string) int {
	if len(args) > 0 {
		for _, sub := range cmd.Subcommands {
			if args[0] == sub.Name[strings.LastIndexByte(sub.Name, ' ')+1:] {
				return run(sub, args[1:])
			}
		}
	}
	fs := cmd.Flags
	if fs == nil {
		fs = NewFlags(cmd.Name)
	}
	if fs.Lookup("config") == nil {
		fs.String("config", "", "YAML config profile; built-in defaults when empty")
		addConfigFlags(fs)
	}
	readsConfig := !fs.Lookup("config").Hidden
	if !readsConfig {
		// A command that reads no config key takes neither --set nor --print-config.
		for _, name := range []string{"set", "print-config"} {
			if f := fs.Lookup(name); f != nil {
				f.Hidden = true
			}
		}
	}
	if fs.Lookup("quiet") == nil {
		fs.Bool("quiet", false, "no progress bars")
	}
	if fs.Lookup("version") == nil {
		fs.Bool("version", false, "print the version and exit")
	}
	fs.Usage = func() { writeUsage(os.Stderr, cmd, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name, err)
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.Name)
		return 2
	}
	if q, _ := fs.GetBool("quiet"); q {
		progress.SetQuiet(true)
	}
	if v, _ := fs.GetBool("version"); v {
		fmt.Fprintln(stdout, cmd.Name, Version())
		return 0
	}
	if !readsConfig && (fs.Changed("set") || fs.Changed("print-config")) {
		fmt.Fprintf(os.Stderr, "%s: --set and --print-config do not apply: this command reads no config key\n", cmd.Name)
		return 2
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		// The first signal cancels ctx: the command stops cleanly at its next check. A second one
		// exits at once, for work that cannot see ctx (a graph step already running, a backend
		// that hangs): outputs are written aside and renamed when complete, so what is cut short
		// stays a temporary beside them and never replaces a previous result.
		select {
		case sig := <-sigs:
			cancel(signalError{sig})
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "%s: %v again: exiting now (unfinished outputs stay as temporaries)\n", cmd.Name, sig)
			exitNow(signalExitCode(sig))
		case <-done:
		}
	}()
	err := cmd.Run(ctx, fs.Args())
	switch {
	case err == nil, errors.Is(err, errConfigPrinted):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name, err)
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.Name)
		return 2
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "%s: interrupted: %v\n", cmd.Name, err)
		var se signalError
		if errors.As(context.Cause(ctx), &se) {
			return signalExitCode(se.sig)
		}
		return 130
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name, err)
		return 1
	}
}

// Usagef returns an ErrUsage error with a message, e.g. Usagef("--out is required").
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// exitNow ends the process on a second signal (a variable for the tests).
var exitNow = os.Exit

// signalExitCode is the shell's code for a process stopped by sig: 143 for SIGTERM, 130 for SIGINT.
func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return 143
	}
	return 130
}

// signalError is the cancellation cause of a command's context when a signal stopped it, so that the
// exit code can tell SIGTERM (143) from SIGINT (130).
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "received " + e.sig.String() }

// CheckOutputs refuses outputs that would replace an input, before any work is done: the one rule
// of every command that writes a file or a directory (prepare, train, infer, eval, export). inputs
// and outputs map a flag name (e.g. "--input") to its path; empty paths are skipped. An output is
// refused when it is the same file as an input (after symlinks, by device and inode, so that a
// symlink or a hard link to an input is caught), when it lies inside an input directory (a
// prepared directory or a checkpoint: writing there would change what was read), when an input
// lies inside it (an output directory is replaced as a whole, so the input would be deleted with
// it: issue 22 defects 6 and 7), or when two outputs are the same file.
func CheckOutputs(inputs, outputs map[string]string) error {
	outNames := slices.Sorted(maps.Keys(outputs))
	inNames := slices.Sorted(maps.Keys(inputs))
	for i, on := range outNames {
		out := outputs[on]
		if out == "" {
			continue
		}
		for _, in := range inNames {
			if inputs[in] == "" {
				continue
			}
			switch where := Within(out, inputs[in]); where {
			case SameFile:
				return fmt.Errorf("%s %s is the same file as %s %s: refusing to overwrite an input", on, out, in, inputs[in])
			case InsideDir:
				return fmt.Errorf("%s %s is inside the %s directory %s: refusing to write into an input; choose another path", on, out, in, inputs[in])
			}
			if _, err := os.Stat(inputs[in]); err == nil && Within(inputs[in], out) == InsideDir {
				return fmt.Errorf("%s %s is inside %s %s, which is replaced as a whole: refusing to delete an input; choose another %s", in, inputs[in], on, out, on)
			}
		}
		for _, other := range outNames[i+1:] {
			if outputs[other] != "" && sameOutput(out, outputs[other]) {
				return fmt.Errorf("%s and %s are the same file (%s): give them different paths", on, other, out)
			}
		}
	}
	return nil
}

// sameOutput reports whether two output paths, which need not exist yet, name one file.
func sameOutput(a, b string) bool {
	if Within(a, b) == SameFile {
		return true
	}
	ra, errA := resolve(a)
	rb, errB := resolve(b)
	return errA == nil && errB == nil && ra == rb
}

// Relation says where a path lies relative to another (see Within).
type Relation int

// Relations returned by Within.
const (
	// Apart: neither the same file nor inside the other path's directory.
	Apart Relation = iota
	// SameFile: both paths name one file or directory (symlinks followed, compared by inode).
	SameFile
	// InsideDir: the path is below the other, which is a directory.
	InsideDir
)

// Within reports whether path is the same file as other or lies inside the directory other. Both
// are resolved on disk: path need not exist (its deepest existing ancestor is resolved and the rest
// appended), other must exist (a missing other is Apart). Symlinks anywhere on either path are
// followed, and files are compared by device and inode (os.SameFile), not by name.
func Within(path, other string) Relation {
	ost, err := os.Stat(other)
	if err != nil {
		return Apart
	}
	p, err := resolve(path)
	if err != nil {
		return Apart
	}
	for first := true; ; first = false {
		if st, err := os.Stat(p); err == nil && os.SameFile(st, ost) {
			if first {
				return SameFile
			}
			return InsideDir
		}
		parent := filepath.Dir(p)
		if parent == p {
			return Apart
		}
		p = parent
	}
}

// resolve returns path made absolute with the symlinks of its deepest existing ancestor resolved,
// so that ".." after a symlinked directory is read the way the kernel reads it.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	p := abs
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// writeUsage writes cmd's --help text. The footer on configuration keys is left out when the
// command hides --config (it reads no config key: tracksum-export).
func writeUsage(w io.Writer, cmd Command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s %s\n\n", cmd.Name, cmd.Synopsis)
	if cmd.Description != "" {
		fmt.Fprintf(w, "%s\n\n", cmd.Description)
	}
	if len(cmd.Subcommands) > 0 {
		fmt.Fprintf(w, "Subcommands (each with its own --help):\n")
		for _, sub := range cmd.Subcommands {
			fmt.Fprintf(w, "  %-12s %s\n", sub.Name[strings.LastIndexByte(sub.Name, ' ')+1:], sub.Description)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Flags:\n%s", fs.FlagUsages())
	if f := fs.Lookup("config"); f != nil && !f.Hidden {
		fmt.Fprintf(w, "\nEvery config key can also be set with --set key=value or an environment variable %s_SECTION_KEY\n"+
			"(e.g. %s_SEED=1). Precedence: --set > flag > environment > --config file > defaults;\n"+
			"--print-config shows the result.\n", config.EnvPrefix, config.EnvPrefix)
	}
}

// Version describes the build: the module version, the commit it was built from (with "+dirty"
// when the work tree had changes), the Go version and GOEXPERIMENT, as Go stamps them into the
// binary (`go build` in a git checkout); "(devel)" without that information.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty, exp string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		case "GOEXPERIMENT":
			exp = " GOEXPERIMENT=" + s.Value
		}
	}
	if rev = rev[:min(12, len(rev))]; rev != "" && !strings.Contains(v, rev) {
		v += " commit " + rev + dirty
	}
	return v + " (" + bi.GoVersion + exp + ")"
}
