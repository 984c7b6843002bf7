// Command tracksum-export writes a merged Hugging Face snapshot (base weights with the LoRA adapters
// merged in) from a tracksum checkpoint of a pretrained model (docs/pretrained.md).
//
//	tracksum-export --checkpoint CK --out DIR [--overwrite] [--base DIR]
package main

import (
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(export.Command()) }
