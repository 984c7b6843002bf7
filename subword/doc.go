// Package subword learns subword vocabularies from a corpus, writes them as Hugging Face
// tokenizer.json files, and encodes/decodes text with them.
//
// sugarme/tokenizer (the Go port of HF tokenizers) loads and encodes tokenizer.json files, but its
// trainers are unusable and its Save is a stub, so Train learns the vocabulary here (byte-level BPE
// like GPT-2, or cased WordPiece like BERT) and Vocab.WriteFile writes the standard JSON. Load reads
// it back with the library. Encode cleans the text first (Clean) and never panics; for our own files
// it runs a native re-implementation of the library's pipeline that the tests prove id-for-id equal
// to the library.
//
// # Example
//
//	v, err := subword.Train(slices.Values(sentences), subword.TrainOptions{VocabSize: 8000})
//	if err != nil { ... }
//	if err := v.WriteFile("out/tokenizer.json"); err != nil { ... }
//	tok, err := subword.Load("out/tokenizer.json")
//	if err != nil { ... }
//	ids := tok.Encode("Patients received 3 mg/kg (95% CI: 8.3-15.9).")
//	text := tok.Decode(ids) // == subword.Clean(input) for byte-level BPE
//	pad, _ := tok.SpecialID("[PAD]") // 0
package subword
