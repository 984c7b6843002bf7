// Package tensorio reads and writes named tensors in the safetensors layout: tracksum's
// checkpoints, resume points, adapters and exported snapshots. It sits below every model and
// Hugging Face package (docs/architecture.md, "Layers").
//
// go-huggingface's reader (models/safetensors) serves pretrained snapshots (hf/snapshot), sharded
// and memory-mapped; this package exists for what that reader lacks: writing (atomically, one
// tensor at a time for a 16 GB merged model), a header validated before any allocation a hostile
// file could size (ParseSafetensorsHeader), and bit-identical round trips of every GoMLX dtype.
package tensorio
