package serve

import (
	"context"
	"os"

	"github.com/tracksum/tracksum/internal/cli"
)

// Command is `tracksum-serve --summarizer CKPT [--tracker CKPT] [--listen 127.0.0.1:8000] [flags]`.
func Command() cli.Command {
	d := DefaultOptions()
	fs := cli.NewFlags("tracksum-serve")
	_ = fs.MarkHidden("config") // serve reads no config key: its settings are its flags
	fs.String("summarizer", "", "summarizer checkpoint directory (required)")
	fs.String("tracker", "", "tracker checkpoint directory: chooses the cited sentences (without it every numbered sentence is cited)")
	fs.String("default-aspect", "", "aspect of a message that names none (default: the first of the checkpoint's aspect set)")
	fs.String("listen", d.Listen, "TCP address to listen on")
	fs.String("model-name", d.ModelName, "model id served by /v1/models and expected in requests")
	fs.Int("workers", d.Workers, "requests the model runs at once")
	fs.Int("queue", d.Queue, "requests that may wait for a worker; more are answered 429 with Retry-After")
	fs.Int64("max-body-bytes", d.MaxBodyBytes, "largest request body (413 beyond)")
	fs.Duration("body-timeout", d.BodyTimeout, "time limit to receive a request body, read before the request is admitted (408 beyond)")
	fs.Duration("request-timeout", d.RequestTimeout, "time limit of a request, queueing included (504 beyond)")
	fs.Duration("shutdown-timeout", d.ShutdownTimeout, "time allowed to drain in-flight requests on SIGTERM/SIGINT")
	fs.String("api-key-env", "", "environment variable holding a bearer token that requests must carry (empty: no authentication)")
	fs.Bool("log-prompts", false, "write the request messages into the access log (off: prompts may hold private text)")
	return cli.Command{
		Name:     "tracksum-serve",
		Synopsis: "--summarizer CKPT [--tracker CKPT] [--listen 127.0.0.1:8000] [flags]",
		Description: "OpenAI-compatible chat-completions server (POST /v1/chat/completions, optional \"stream\": true;\n" +
			"GET /v1/models; GET /health) over a tracksum checkpoint, so that the LLM methods of tracksum-infer and\n" +
			"tracksum-eval run offline. The prompt convention (numbered sentences and an aspect -> Track-then-Sum\n" +
			"with citations; anything else -> a summary of the message) is in docs/serve.md. One JSON access-log\n" +
			"line per request goes to stderr. SIGTERM/SIGINT drain the requests in flight and exit 0.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			o := d
			summ, _ := fs.GetString("summarizer")
			trk, _ := fs.GetString("tracker")
			aspect, _ := fs.GetString("default-aspect")
			o.Listen, _ = fs.GetString("listen")
			o.ModelName, _ = fs.GetString("model-name")
			o.Workers, _ = fs.GetInt("workers")
			o.Queue, _ = fs.GetInt("queue")
			o.MaxBodyBytes, _ = fs.GetInt64("max-body-bytes")
			o.BodyTimeout, _ = fs.GetDuration("body-timeout")
			o.RequestTimeout, _ = fs.GetDuration("request-timeout")
			o.ShutdownTimeout, _ = fs.GetDuration("shutdown-timeout")
			o.LogPrompts, _ = fs.GetBool("log-prompts")
			if env, _ := fs.GetString("api-key-env"); env != "" {
				o.APIKey = os.Getenv(env)
				if o.APIKey == "" {
					return cli.Usagef("--api-key-env %s: the variable is empty or unset", env)
				}
			}
			if summ == "" {
				return cli.Usagef("--summarizer is required")
			}
			if err := o.Validate(); err != nil {
				return cli.Usagef("%v", err)
			}
			b, err := LoadTrackSum(summ, trk, aspect)
			if err != nil {
				return err
			}
			o.Log = os.Stderr
			s, err := New(b, o)
			if err != nil {
				return err
			}
			return s.ListenAndServe(ctx)
		},
	}
}
