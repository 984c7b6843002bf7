// Package snapshot opens and validates a local Hugging Face model snapshot: a directory with
// config.json, model.safetensors (or model.safetensors.index.json and its shards), tokenizer.json,
// tokenizer_config.json and, optionally, generation_config.json. It never downloads: the directory
// is read through go-huggingface's hub.NewLocal, and weights through its models/safetensors reader.
//
// Every error is one line naming the file and the problem, so a user who passes the wrong
// directory, a PyTorch-only checkpoint or a corrupted shard learns what to fix.
//
// # Example
//
//	s, err := snapshot.Open("/models/Llama-3.2-1B-Instruct")
//	hidden, err := s.Int("hidden_size", 0)
//	weights, err := s.Tensors(ctx, func(name string) bool { return strings.HasPrefix(name, "model.layers.0.") })
package snapshot

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-huggingface/hub"
	"github.com/gomlx/go-huggingface/models/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// SupportedModelTypes lists config.json model_type values tracksum can load: the families of
// hf/family.
var SupportedModelTypes = family.Names("")

// File names of a Hugging Face snapshot.
const (
	ConfigFile           = "config.json"
	WeightsFile          = "model.safetensors"
	WeightsIndexFile     = "model.safetensors.index.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	GenerationConfigFile = "generation_config.json"
)

// Sentinel errors, wrapped by the one-line errors of this package, for callers that test for them
// with errors.Is.
var (
	// ErrMissingFile: a required file (or the directory itself) is absent.
	ErrMissingFile = errors.New("missing file")
	// ErrUnsupportedModelType: config.json's model_type is not in SupportedModelTypes.
	ErrUnsupportedModelType = errors.New("unsupported model_type")
	// ErrNonFinite: a weight holds NaN or ±Inf.
	ErrNonFinite = errors.New("non-finite weight")
	// ErrShape: a tensor's shape differs from what the config implies.
	ErrShape = errors.New("shape mismatch")
	// ErrMissingTensor: a weight the config requires is absent (hf/decoder, hf/encoder).
	ErrMissingTensor = errors.New("missing tensor")
)

// Snapshot is an opened, validated local Hugging Face snapshot. Weights are not read until
// Tensors is called; Open only reads the safetensors headers.
type Snapshot struct {
	// Dir is the snapshot directory as given to Open (cleaned).
	Dir string
	// Repo is go-huggingface's view of Dir (hub.NewLocal): it never downloads.
	Repo *hub.Repo
	// ModelType is config.json's model_type.
	ModelType string
	// Config is the raw config.json.
	Config map[string]any
	// WeightFiles are the safetensors files holding the weights, relative to Dir, sorted:
	// model.safetensors, or the shards named by model.safetensors.index.json.
	WeightFiles []string
	// HasGenerationConfig reports whether generation_config.json is present.
	HasGenerationConfig bool
	// ConfigOnly is set by OpenConfig: the weights were not read, so nothing is checked against
	// them (the configuration's own limits still apply).
	ConfigOnly bool
	// Quant is config.json's quantization_config (bitsandbytes 4-bit NF4), or nil. Its weights
	// are dequantized when read: Names, Shape and Tensors show each one as the tensor it was
	// before quantization, never its packed codes and their companions.
	Quant *Quantization

	weights *safetensors.Model
	// quantized maps each NF4 weight's name to its checked quant_state; hidden holds the names
	// of their companion tensors (absmax, maps, quant_state).
	quantized map[string]quantized
	hidden    map[string]bool
	// headers are the validated headers of WeightFiles (tensorio.ReadSafetensorsHeader).
	headers map[string]map[string]tensorio.SafetensorsEntry
}

// Open validates the snapshot in dir: the directory, config.json with a supported model_type,
// tokenizer.json, tokenizer_config.json and the weights (model.safetensors, or the index and every
// shard it names, each with a readable header that holds the tensors the index assigns to it).
func Open(dir string) (*Snapshot, error) {
	s, err := openFiles(dir)
	if err != nil {
		return nil, err
	}
	if err := s.openWeights(); err != nil {
		return nil, err
	}
	if err := s.readQuantization(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenConfig opens a snapshot without its weights: the directory, config.json with a supported
// model_type, tokenizer.json and tokenizer_config.json, as Open checks them. It is for reading the
// architecture only (tracksum-train --plan, where a user may have downloaded just the config and
// tokenizer files); Names, Shape, Tensors and WeightsSHA256 of the result see no weights.
func OpenConfig(dir string) (*Snapshot, error) {
	s, err := openFiles(dir)
	if err != nil {
		return nil, err
	}
	s.weights = safetensors.NewEmpty(s.Repo)
	s.weights.Index = &safetensors.ShardedModelIndex{WeightMap: map[string]string{}}
	s.weights.Headers = map[string]*safetensors.Header{}
	s.ConfigOnly = true
	if err := s.readQuantization(); err != nil {
		return nil, err
	}
	return s, nil
}

// openFiles checks the directory, config.json and the tokenizer files (not the weights).
func openFiles(dir string) (*Snapshot, error) {
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, tagged(ErrMissingFile, "snapshot %s: directory does not exist", dir)
		}
		return nil, fmt.Errorf("snapshot %s: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("snapshot %s: not a directory (want a Hugging Face snapshot directory)", dir)
	}
	s := &Snapshot{Dir: dir, Repo: hub.NewLocal(dir)}
	if err := s.readConfig(); err != nil {
		return nil, err
	}
	for _, name := range []string{TokenizerFile, TokenizerConfigFile} {
		if !fileExists(filepath.Join(dir, name)) {
			return nil, tagged(ErrMissingFile, "snapshot %s: %s is missing", dir, name)
		}
		// A FIFO would block the tokenizer's read forever: refused here, with its name.
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", filepath.Join(dir, name))
		}
	}
	s.HasGenerationConfig = fileExists(filepath.Join(dir, GenerationConfigFile))
	return s, nil
}

func (s *Snapshot) readConfig() error {
	path := filepath.Join(s.Dir, ConfigFile)
	err := atomicio.ReadJSON(path, &s.Config, false)
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return tagged(ErrMissingFile, "snapshot %s: %s is missing", s.Dir, ConfigFile)
	case errors.As(err, &pathErr):
		return fmt.Errorf("%s: %v", path, err)
	case err != nil:
		return err // names the file, and the line and column of a syntax error
	}
	if s.Config == nil {
		return fmt.Errorf("%s: want a JSON object", path)
	}
	mt, ok := s.Config["model_type"].(string)
	if !ok || mt == "" {
		return fmt.Errorf("%s: no model_type string (supported: %s)", path, strings.Join(SupportedModelTypes, ", "))
	}
	if !slices.Contains(SupportedModelTypes, mt) {
		return tagged(ErrUnsupportedModelType, "%s: model_type %q is not supported (supported: %s)",
			path, mt, strings.Join(SupportedModelTypes, ", "))
	}
	s.ModelType = mt
	return nil
}

// openWeights reads the index (if any) and validates every weight file's header with the one
// safetensors header check of package model (dtypes, dimensions, byte sizes that do not wrap,
// offsets within the file, no overlaps) before go-huggingface's reader, which trusts the header,
// is given the file. The single-file case builds the index from model.safetensors explicitly,
// rather than the library's "first .safetensors file found", which could pick an adapter file in
// a subdirectory.
func (s *Snapshot) openWeights() error {
	m := safetensors.NewEmpty(s.Repo)
	s.headers = map[string]map[string]tensorio.SafetensorsEntry{}
	switch {
	case fileExists(filepath.Join(s.Dir, WeightsIndexFile)):
		indexPath := filepath.Join(s.Dir, WeightsIndexFile)
		if _, err := atomicio.ReadFile(indexPath); err != nil {
			return err
		}
		if err := m.LoadShardedModel(WeightsIndexFile); err != nil {
			return fmt.Errorf("%s: %v", indexPath, oneLine(err))
		}
		if len(m.Index.WeightMap) == 0 {
			return fmt.Errorf("%s: weight_map is empty", indexPath)
		}
		byFile := map[string][]string{}
		for name, file := range m.Index.WeightMap {
			byFile[file] = append(byFile[file], name)
		}
		for file := range byFile {
			s.WeightFiles = append(s.WeightFiles, file)
		}
		slices.Sort(s.WeightFiles)
		for _, file := range s.WeightFiles {
			names := byFile[file]
			slices.Sort(names)
			// Shards are files of the snapshot: an absolute path or one climbing out of it would
			// read another model's weights (and "missing" misleads when that file exists).
			if !filepath.IsLocal(file) {
				return fmt.Errorf("%s: shard path %q (for %d tensors, e.g. %s) is not a relative path inside the snapshot",
					indexPath, file, len(names), names[0])
			}
			if !fileExists(filepath.Join(s.Dir, file)) {
				return tagged(ErrMissingFile, "%s: shard %s (named for %d tensors, e.g. %s) is missing",
					indexPath, file, len(names), names[0])
			}
			header, err := tensorio.ReadSafetensorsHeader(filepath.Join(s.Dir, file))
			if err != nil {
				return err
			}
			s.headers[file] = header
			for _, name := range names {
				if _, ok := header[name]; !ok {
					return fmt.Errorf("%s: index names tensor %s in shard %s, which does not hold it",
						indexPath, name, file)
				}
			}
			fi, err := m.GetSafetensor(file)
			if err != nil {
				return fmt.Errorf("%s: unreadable safetensors header: %v", filepath.Join(s.Dir, file), oneLine(err))
			}
			m.Headers[file] = fi.Header
		}
	case fileExists(filepath.Join(s.Dir, WeightsFile)):
		header, err := tensorio.ReadSafetensorsHeader(filepath.Join(s.Dir, WeightsFile))
		if err != nil {
			return err
		}
		if len(header) == 0 {
			return fmt.Errorf("%s: holds no tensors", filepath.Join(s.Dir, WeightsFile))
		}
		s.headers[WeightsFile] = header
		fi, err := m.GetSafetensor(WeightsFile)
		if err != nil {
			return fmt.Errorf("%s: unreadable safetensors header: %v", filepath.Join(s.Dir, WeightsFile), oneLine(err))
		}
		m.Index = &safetensors.ShardedModelIndex{WeightMap: map[string]string{}}
		for name := range fi.Header.Tensors {
			m.Index.WeightMap[name] = WeightsFile
		}
		m.IndexFile = WeightsFile
		m.Headers = map[string]*safetensors.Header{WeightsFile: fi.Header}
		s.WeightFiles = []string{WeightsFile}
	default:
		hint := ""
		if fileExists(filepath.Join(s.Dir, "pytorch_model.bin")) || fileExists(filepath.Join(s.Dir, "pytorch_model.bin.index.json")) {
			hint = " (only PyTorch .bin weights found: convert them to safetensors)"
		}
		return tagged(ErrMissingFile, "snapshot %s: neither %s nor %s is present%s",
			s.Dir, WeightsFile, WeightsIndexFile, hint)
	}
	s.weights = m
	return nil
}

// Names returns the names of all weight tensors, sorted (a quantized weight's companions are
// not listed).
func (s *Snapshot) Names() []string {
	names := slices.DeleteFunc(s.weights.ListTensorNames(), func(n string) bool { return s.hidden[n] })
	slices.Sort(names)
	return names
}

// Shape returns a tensor's shape (dtype and dimensions) from the safetensors header, without
// reading its data; ok is false when the snapshot has no such tensor.
func (s *Snapshot) Shape(name string) (shape shapes.Shape, ok bool) {
	if q, found := s.quantized[name]; found {
		return q.shape, true
	}
	file, found := s.weights.Index.WeightMap[name]
	if !found {
		return shapes.Shape{}, false
	}
	e, found := s.headers[file][name]
	if !found {
		return shapes.Shape{}, false
	}
	return e.Shape, true
}

// CheckLayerCount compares a layer count of config.json (key, e.g. num_hidden_layers, value n)
// with the layers the weights hold: the distinct indices i of tensors named prefix+i+"." for the
// first of prefixes that names any tensor (e.g. "model.layers."). It runs on the headers, before
// anything is sized by n, so a config claiming 1e9 layers fails at once instead of growing a
// per-layer table until the process is killed; a config with fewer layers than its weights is
// refused too, since the extra layers would be dropped silently.
func (s *Snapshot) CheckLayerCount(key string, n int, prefixes ...string) error {
	if s.ConfigOnly {
		return nil // no weights to compare with (OpenConfig): the config's limits were checked
	}
	held := map[int]bool{}
	used := ""
	for _, prefix := range prefixes {
		for name := range s.weights.Index.WeightMap {
			rest, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			idx, _, _ := strings.Cut(rest, ".")
			if i, err := strconv.Atoi(idx); err == nil && i >= 0 {
				held[i] = true
			}
		}
		if len(held) > 0 {
			used = prefix
			break
		}
	}
	if n == len(held) {
		return nil
	}
	path := filepath.Join(s.Dir, ConfigFile)
	if len(held) == 0 {
		return fmt.Errorf("%s: %s = %d, but the weights hold no layer tensors (%s0.*)", path, key, n, prefixes[0])
	}
	if n > len(held) {
		return fmt.Errorf("%s: %s = %d, but the weights hold %d layers (%s*): the config does not match its weights", path, key, n, len(held), used)
	}
	return fmt.Errorf("%s: %s = %d, but the weights hold %d layers (%s*): the extra layers would be ignored; fix the config", path, key, n, len(held), used)
}

// FileOf returns the weight file (relative to Dir) that holds the named tensor, or "".
func (s *Snapshot) FileOf(name string) string {
	return s.weights.Index.WeightMap[name]
}

// Tensors reads the weights whose names keep accepts (all of them when keep is nil) into host
// tensors, in their stored dtype (bf16, f16, f32...). A weight holding NaN or ±Inf is an error
// naming the tensor and its file. A bitsandbytes NF4 weight is dequantized (the first step of
// QLoRA's support: the frozen base then takes the memory of its unquantized dtype).
//
// ctx is checked before each tensor is read: the weights of a large snapshot take minutes to read,
// and a command stopped by SIGINT or SIGTERM must not finish reading them first (issue 22). A
// cancelled ctx gives an error wrapping ctx.Err() (context.Canceled), naming the file and the
// tensor it stopped before.
func (s *Snapshot) Tensors(ctx context.Context, keep func(name string) bool) (map[string]*tensors.Tensor, error) {
	out, err := s.read(ctx, s.withCompanions(keep))
	if err != nil {
		return nil, err
	}
	if err := s.dequantizeAll(out); err != nil {
		return nil, err
	}
	return out, nil
}

// read reads the tensors keep accepts as they are stored.
func (s *Snapshot) read(ctx context.Context, keep func(name string) bool) (map[string]*tensors.Tensor, error) {
	out := map[string]*tensors.Tensor{}
	for _, file := range s.WeightFiles {
		var names []string
		for name := range s.weights.Headers[file].Tensors {
			if s.weights.Index.WeightMap[name] == file && (keep == nil || keep(name)) {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		path := filepath.Join(s.Dir, file)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: reading stopped before tensor %s: %w", path, names[0], err)
		}
		reader, err := s.weights.NewTensorReader(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, oneLine(err))
		}
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				reader.Close()
				return nil, fmt.Errorf("%s: reading stopped before tensor %s: %w", path, name, err)
			}
			t, err := reader.ReadTensor(nil, name)
			if err != nil {
				reader.Close()
				return nil, fmt.Errorf("%s: tensor %s: %v", path, name, oneLine(err))
			}
			if err := CheckFinite(t); err != nil {
				reader.Close()
				return nil, tagged(ErrNonFinite, "%s: tensor %s: %v", path, name, err)
			}
			out[name] = t
		}
		if err := reader.Close(); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	return out, nil
}

// CheckFinite returns an error naming the first NaN or ±Inf value of a float tensor (nil for other
// dtypes). It looks at the raw bits, so bf16 and f16 weights are checked without a conversion.
func CheckFinite(t *tensors.Tensor) error {
	var bad error
	err := t.ConstBytes(func(b []byte) {
		switch t.DType() {
		case dtypes.Float32:
			for i := 0; i+4 <= len(b); i += 4 {
				if v := math.Float32frombits(binary.LittleEndian.Uint32(b[i:])); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					bad = fmt.Errorf("value %d is %v", i/4, v)
					return
				}
			}
		case dtypes.Float64:
			for i := 0; i+8 <= len(b); i += 8 {
				if v := math.Float64frombits(binary.LittleEndian.Uint64(b[i:])); math.IsNaN(v) || math.IsInf(v, 0) {
					bad = fmt.Errorf("value %d is %v", i/8, v)
					return
				}
			}
		case dtypes.BFloat16, dtypes.Float16:
			// Exponent all ones means NaN or Inf in both half formats.
			mask := uint16(0x7F80)
			if t.DType() == dtypes.Float16 {
				mask = 0x7C00
			}
			for i := 0; i+2 <= len(b); i += 2 {
				if binary.LittleEndian.Uint16(b[i:])&mask == mask {
					bad = fmt.Errorf("value %d is NaN or Inf (%s)", i/2, t.DType())
					return
				}
			}
		}
	})
	if err != nil {
		return err
	}
	return bad
}

// WeightsSHA256 returns the hex SHA-256 of the weight files' bytes concatenated in WeightFiles
// order: for a single-file snapshot it equals `sha256sum model.safetensors`. Checkpoints record it
// so a changed base model is detected. The digest is cached (CachedSHA256): a snapshot whose
// files keep their path, size, modification time and inode is not read again. Hashing stops with
// an error wrapping ctx.Err() once ctx is cancelled.
func (s *Snapshot) WeightsSHA256(ctx context.Context) (string, error) {
	paths := make([]string, len(s.WeightFiles))
	for i, file := range s.WeightFiles {
		paths[i] = filepath.Join(s.Dir, file)
	}
	return CachedSHA256(ctx, paths)
}

// Int returns the integer config.json value at key, or def when the key is absent or null.
func (s *Snapshot) Int(key string, def int) (int, error) {
	v, ok := s.Config[key]
	if !ok || v == nil {
		return def, nil
	}
	f, isNum := v.(float64)
	if !isNum || f != math.Trunc(f) {
		return 0, fmt.Errorf("%s: %s = %v, want an integer", filepath.Join(s.Dir, ConfigFile), key, jsonText(v))
	}
	if math.Abs(f) > 1<<53 {
		// An integer all the same (2^62 read as the float 4.611686018427388e+18): past 2^53 its
		// value is not exact, and no size, id or count of a real model comes near.
		return 0, fmt.Errorf("%s: %s = %s is beyond any real model (limit 2^53)", filepath.Join(s.Dir, ConfigFile), key, strconv.FormatFloat(f, 'f', 0, 64))
	}
	return int(f), nil
}

// Float returns the numeric config.json value at key, or def when the key is absent or null.
func (s *Snapshot) Float(key string, def float64) (float64, error) {
	v, ok := s.Config[key]
	if !ok || v == nil {
		return def, nil
	}
	f, isNum := v.(float64)
	if !isNum {
		return 0, fmt.Errorf("%s: %s = %v, want a number", filepath.Join(s.Dir, ConfigFile), key, jsonText(v))
	}
	return f, nil
}

// Bool returns the boolean config.json value at key, or def when the key is absent or null.
func (s *Snapshot) Bool(key string, def bool) (bool, error) {
	v, ok := s.Config[key]
	if !ok || v == nil {
		return def, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("%s: %s = %v, want true or false", filepath.Join(s.Dir, ConfigFile), key, jsonText(v))
	}
	return b, nil
}

// String returns the string config.json value at key, or def when the key is absent or null.
func (s *Snapshot) String(key string, def string) (string, error) {
	v, ok := s.Config[key]
	if !ok || v == nil {
		return def, nil
	}
	str, isStr := v.(string)
	if !isStr {
		return "", fmt.Errorf("%s: %s = %v, want a string", filepath.Join(s.Dir, ConfigFile), key, jsonText(v))
	}
	return str, nil
}

// CheckShape returns an error (wrapping ErrShape) when got's dimensions differ from want, e.g.
// "layers.0.self_attn.q_proj.weight: shape [4 8], want [8 8]".
func CheckShape(name string, got shapes.Shape, want ...int) error {
	if slices.Equal(got.Dimensions, want) || (len(got.Dimensions) == 0 && len(want) == 0) {
		return nil
	}
	return tagged(ErrShape, "%s: shape %v, want %v", name, dimsText(got.Dimensions), dimsText(want))
}

func dimsText(d []int) string {
	if d == nil {
		d = []int{}
	}
	return fmt.Sprint(d)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// oneLine keeps wrapped library errors (github.com/pkg/errors may carry stack traces when
// printed with %+v) to their one-line message.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// taggedError keeps the one-line message free of the sentinel's text while errors.Is still
// matches the sentinel.
type taggedError struct {
	msg  string
	kind error
}

func (e *taggedError) Error() string { return e.msg }
func (e *taggedError) Unwrap() error { return e.kind }

func tagged(kind error, format string, args ...any) error {
	return &taggedError{msg: fmt.Sprintf(format, args...), kind: kind}
}
