package serve

import (
	"encoding/json"
	"testing"
	"time"
)

// oneAtATime is a backend that answers one request at a time in chat mode, as pretrained's
// ChatModel does.
type oneAtATime struct{ Backend }

func (oneAtATime) Mode() string     { return ModeChat }
func (oneAtATime) Concurrency() int { return 1 }

// TestListeningReportsRealConcurrency: the "listening" line says the mode and how many requests
// are really answered at once, not --workers alone (issue 37 item 6).
func TestListeningReportsRealConcurrency(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		backend     Backend
		workers     int
		mode        any
		concurrency float64
	}{
		{"chat answers one at a time", oneAtATime{}, 4, ModeChat, 1},
		{"tracksum uses the workers", &TrackSum{}, 4, ModeTrackSum, 4},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s, err := New(tc.backend, Options{Listen: "127.0.0.1:0", ModelName: "m", Workers: tc.workers, Queue: 1, MaxBodyBytes: 1 << 20,
				BodyTimeout: time.Second, RequestTimeout: time.Second, ShutdownTimeout: time.Second, RetryAfter: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(s.listeningFields("127.0.0.1:1"))
			var f map[string]any
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			if f["mode"] != tc.mode || f["concurrency"] != tc.concurrency {
				t.Errorf("listening fields %s: want mode %v, concurrency %v", b, tc.mode, tc.concurrency)
			}
		})
	}
}
