// Package crashtest holds the crash-safety check of the tracksum commands (`make crashtest`):
// random SIGKILLs during prepare, train (from scratch and a pretrained LoRA run), train --migrate, export and eval (the lexical judge, and the nli judge while it fills its cache), each followed by checks that the output is the
// previous complete version or the new complete one, and by a rerun that must end with exactly the
// result of an uninterrupted run. It needs the binaries of `make build` and runs only with
// CRASHTEST=1 (minutes of both cores; not part of `make test`).
package crashtest
