// Package cli is the plumbing shared by the tracksum commands: flag sets with --help and --config,
// config resolution through one viper instance per command, Ctrl-C handling and exit codes. It keeps
// each cmd/<name>/main.go down to a few lines.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
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
}

// NewFlags returns an empty flag set for a command, with --config already defined.
func NewFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.String("config", "", "YAML config profile (e.g. configs/tiny.yaml); built-in defaults when empty")
	return fs
}

// LoadConfig resolves the configuration for a command whose flags were parsed: --config file, then
// TRACKSUM_* environment variables, then the flags named in flagKeys (flag name -> dotted key).
func LoadConfig(fs *pflag.FlagSet, flagKeys map[string]string) (*config.Config, error) {
	file, _ := fs.GetString("config")
	return config.Load(viper.New(), file, fs, flagKeys)
}

// Main parses the command line, runs the command and exits: 0 on success, 2 on a usage error, 1 on
// any other error, 130 when interrupted. Errors are printed as one line prefixed by the command name.
func Main(cmd Command) {
	os.Exit(run(cmd, os.Args[1:]))
}

func run(cmd Command, args []string) int {
	fs := cmd.Flags
	if fs == nil {
		fs = NewFlags(cmd.Name)
	}
	if fs.Lookup("config") == nil {
		fs.String("config", "", "YAML config profile; built-in defaults when empty")
	}
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: %s %s\n\n", cmd.Name, cmd.Synopsis)
		if cmd.Description != "" {
			fmt.Fprintf(os.Stderr, "%s\n\n", cmd.Description)
		}
		fmt.Fprintf(os.Stderr, "Flags:\n%s", fs.FlagUsages())
		fmt.Fprintf(os.Stderr, "\nEvery config key can also be set with an environment variable %s_SECTION_KEY\n"+
			"(e.g. %s_SEED=1). Precedence: flag > environment > --config file > defaults.\n", config.EnvPrefix, config.EnvPrefix)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name, err)
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.Name)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.Run(ctx, fs.Args())
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name, err)
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.Name)
		return 2
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "%s: interrupted: %v\n", cmd.Name, err)
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
