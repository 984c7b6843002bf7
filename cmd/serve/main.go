// Command tracksum-serve is an OpenAI-compatible chat-completions server over tracksum models
// (docs/serve.md), so that the LLM methods run offline on a local model.
//
//	tracksum-serve --summarizer CKPT [--tracker CKPT] [--listen 127.0.0.1:8000] [--model-name NAME]
//	tracksum-serve --model PRETRAINED_CKPT|SNAPSHOT [--mode chat] [--listen 127.0.0.1:8000]
package main

import (
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/serve"
)

func main() { cli.Main(serve.Command()) }
