package atomicio

import "path/filepath"

// Files reads the files of a directory by name (relative, slash-separated): the directory as it
// is (DirFiles), or the bytes a verified checkpoint manifest holds (model/checkpoint.Manifest), so
// that a loader parses what was hashed instead of reading the file again.
type Files interface {
	ReadFile(name string) ([]byte, error)
}

// DirFiles reads the files of the directory it names, unverified.
type DirFiles string

// ReadFile implements Files, bounded to MaxTokenizerJSONBytes (the largest metadata file a loader
// parses). A missing file is the *fs.PathError of the read.
func (d DirFiles) ReadFile(name string) ([]byte, error) {
	return ReadFileMax(filepath.Join(string(d), filepath.FromSlash(name)), MaxTokenizerJSONBytes)
}

// ReadJSONFrom decodes the file name of files into v (DecodeJSON: strict refuses unknown fields);
// errors name the file as dir/name.
func ReadJSONFrom(files Files, dir, name string, v any, strict bool) error {
	b, err := files.ReadFile(name)
	if err != nil {
		return err
	}
	return DecodeJSON(filepath.Join(dir, filepath.FromSlash(name)), b, v, strict)
}
