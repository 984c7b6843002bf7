package serve

import (
	"context"
	"fmt"
	"os"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/cli"
)

// The modes of tracksum-serve (--mode).
const (
	// ModeTrackSum answers the prompt convention of docs/serve.md with Track-then-Sum (or a
	// Table 6 variant): TrackSum.
	ModeTrackSum = "tracksum"
	// ModeChat serves a causal LM as itself, through its chat template: Chat.
	ModeChat = "chat"
)

// serveFlagKeys binds every flag of tracksum-serve to its config key (cli.LoadConfig applies those
// given); the command reads its settings from the resolved config only.
var serveFlagKeys = map[string]string{
	"mode":             "serve.mode",
	"summarizer":       "serve.summarizer",
	"tracker":          "serve.tracker",
	"method":           "serve.method",
	"model":            "serve.model",
	"threshold":        "serve.threshold",
	"grounding":        "infer.grounding",
	"full-context":     "infer.full_context",
	"precision":        "infer.precision",
	"max-tokens":       "serve.max_tokens",
	"default-aspect":   "serve.default_aspect",
	"listen":           "serve.listen",
	"model-name":       "serve.model_name",
	"workers":          "serve.workers",
	"queue":            "serve.queue",
	"max-body-bytes":   "serve.max_body_bytes",
	"body-timeout":     "serve.body_timeout",
	"request-timeout":  "serve.request_timeout",
	"shutdown-timeout": "serve.shutdown_timeout",
	"api-key-env":      "serve.api_key_env",
	"log-prompts":      "serve.log_prompts",
}

// ChooseMode returns the mode of a server over the models m names, and in chat mode the model's
// directory. mode, when not empty, is --mode; otherwise a lone causal LM is served as itself
// (chat: --model without --method, or a --summarizer that is a fine-tuned pretrained checkpoint or
// a snapshot, without --tracker) and anything else runs Track-then-Sum. The kind of a directory is
// infer's (infer.CanChat).
func ChooseMode(mode string, m infer.Options) (string, string, error) {
	variant := m.Method == infer.MethodSTT || m.Method == infer.MethodETE
	if mode == "" {
		switch {
		case variant:
			mode = ModeTrackSum
		case m.Model != "" && m.Summarizer == "" && m.Tracker == "":
			mode = ModeChat
		case m.Summarizer != "" && m.Tracker == "" && m.Model == "" && infer.CanChat(m.Summarizer):
			mode = ModeChat
		default:
			mode = ModeTrackSum
		}
	}
	switch mode {
	case ModeTrackSum:
		return mode, "", nil
	case ModeChat:
		if m.Method != "" || m.Tracker != "" || (m.Model == "") == (m.Summarizer == "") {
			return "", "", fmt.Errorf("--mode chat serves one causal LM: give --model DIR (or --summarizer DIR), without --tracker or --method")
		}
		if m.Model != "" {
			return mode, m.Model, nil
		}
		return mode, m.Summarizer, nil
	}
	return "", "", fmt.Errorf("--mode %q: want %s or %s", mode, ModeTrackSum, ModeChat)
}

// Command is `tracksum-serve --summarizer CKPT [--tracker CKPT] [--listen 127.0.0.1:8000] [flags]`.
func Command() cli.Command {
	d := DefaultOptions()
	fs := cli.NewFlags("tracksum-serve")
	fs.String("mode", "", "tracksum (the prompt convention of docs/serve.md, answered by Track-then-Sum) or chat (a causal LM answering as itself through its chat template); default: chat for a lone fine-tuned pretrained checkpoint or snapshot, else tracksum")
	fs.String("summarizer", "", "summarizer checkpoint directory (from scratch or train --pretrained); in chat mode, the causal LM to serve")
	fs.String("tracker", "", "tracker checkpoint directory, or a cross-validation directory (the mean of its fold-k checkpoints' probabilities): chooses the cited sentences (without it every numbered sentence is cited)")
	fs.String("method", "", "tts (Track-then-Sum, the default), stt (SUM-THEN-TRACK: --model, or --summarizer and --tracker) or ete (END-TO-END: --model)")
	fs.String("model", "", "checkpoint of --method stt|ete; without --method, the causal LM to serve in chat mode: a fine-tuned pretrained checkpoint or a Hugging Face snapshot directory")
	fs.Float64("threshold", 0, "tracker decision threshold (default: infer.threshold when set, else the tracker checkpoint's tracker.threshold, else 0.5)")
	fs.String("grounding", "off", "infer.grounding: a cited sentence that supports no claim of its summary is appended to it (restore), dropped from the citations (prune) or left (off); trained summarizers only")
	fs.Bool("full-context", false, "infer.full_context: give the summarizer the whole abstract too (TTS (+) f)")
	fs.String("precision", "", "infer.precision: compute precision of pretrained models: f32, bf16 or auto (bf16 on CUDA, else f32); default: the checkpoint's (f32 for a snapshot)")
	fs.Int("max-tokens", DefaultChatMaxTokens, "chat mode: answer tokens of a request that sets no max_tokens (the model's context bounds every answer)")
	fs.String("default-aspect", "", "aspect of a message that names none (default: the first of the checkpoint's aspect set)")
	fs.String("listen", d.Listen, "TCP address to listen on")
	fs.String("model-name", d.ModelName, "model id served by /v1/models and expected in requests")
	fs.Int("workers", d.Workers, "requests the model runs at once (chat mode generates one answer at a time whatever this says)")
	fs.Int("queue", d.Queue, "requests that may wait for a worker; more are answered 429 with Retry-After")
	fs.Int64("max-body-bytes", d.MaxBodyBytes, "largest request body (413 beyond)")
	fs.Duration("body-timeout", d.BodyTimeout, "time limit to receive a request body, read before the request is admitted (408 beyond)")
	fs.Duration("request-timeout", d.RequestTimeout, "time limit of a request, queueing included (504 beyond)")
	fs.Duration("shutdown-timeout", d.ShutdownTimeout, "time allowed to drain in-flight requests on SIGTERM/SIGINT")
	fs.String("api-key-env", "", "environment variable holding a bearer token that requests must carry (empty: no authentication)")
	fs.Bool("log-prompts", false, "write the request messages into the access log (off: prompts may hold private text)")
	return cli.Command{
		Name: "tracksum-serve",
		Synopsis: "--summarizer CKPT [--tracker CKPT|CVDIR] [--listen 127.0.0.1:8000] [flags]\n" +
			"       tracksum-serve --method stt|ete --model CKPT [flags]\n" +
			"       tracksum-serve --model PRETRAINED_CKPT|SNAPSHOT [--mode chat] [flags]",
		Description: "OpenAI-compatible chat-completions server (POST /v1/chat/completions, optional \"stream\": true;\n" +
			"GET /v1/models; GET /health) over tracksum models, so that the LLM methods of tracksum-infer and\n" +
			"tracksum-eval run offline. --mode tracksum loads the models as tracksum-infer does (grounding, fold\n" +
			"ensembles, stt/ete, pretrained tracker and summarizer) behind a prompt convention (numbered sentences\n" +
			"and an aspect -> Track-then-Sum with citations; anything else -> a summary of the message);\n" +
			"--mode chat serves a fine-tuned pretrained checkpoint or a snapshot as itself, through its chat\n" +
			"template (docs/serve.md). One JSON access-log line per request goes to stderr. SIGTERM/SIGINT drain\n" +
			"the requests in flight and exit 0.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			cfg, err := cli.LoadConfig(fs, serveFlagKeys)
			if err != nil {
				return err
			}
			c := cfg.Serve
			o := d
			o.Listen, o.ModelName, o.Workers, o.Queue = c.Listen, c.ModelName, c.Workers, c.Queue
			o.MaxBodyBytes, o.BodyTimeout, o.RequestTimeout, o.ShutdownTimeout = c.MaxBodyBytes, c.BodyTimeout, c.RequestTimeout, c.ShutdownTimeout
			o.LogPrompts = c.LogPrompts
			m := infer.Options{Summarizer: c.Summarizer, Tracker: c.Tracker, Method: c.Method, Model: c.Model}
			if c.APIKeyEnv != "" {
				o.APIKey = os.Getenv(c.APIKeyEnv)
				if o.APIKey == "" {
					return cli.Usagef("--api-key-env %s: the variable is empty or unset", c.APIKeyEnv)
				}
			}
			if m.Summarizer == "" && m.Model == "" {
				return cli.Usagef("--summarizer is required (or --model: a --method stt|ete checkpoint, or a causal LM for --mode chat)")
			}
			if c.Threshold < 0 || c.Threshold > 1 {
				return cli.Usagef("--threshold %v: want a probability in (0, 1] (0: the tracker's)", c.Threshold)
			}
			if c.MaxTokens < 1 {
				return cli.Usagef("--max-tokens must be >= 1")
			}
			if err := o.Validate(); err != nil {
				return cli.Usagef("%v", err)
			}
			mode, chatDir, err := ChooseMode(c.Mode, m)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			b, err := load(ctx, cfg, mode, chatDir, TrackSumOptions{Models: m, DefaultAspect: c.DefaultAspect, Threshold: c.Threshold, Log: os.Stderr}, c.MaxTokens)
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

// load returns the backend of mode.
func load(ctx context.Context, cfg *config.Config, mode, chatDir string, ts TrackSumOptions, maxTokens int) (Backend, error) {
	if mode == ModeChat {
		return LoadChat(ctx, cfg, chatDir, maxTokens)
	}
	return LoadTrackSumWith(ctx, cfg, ts)
}
