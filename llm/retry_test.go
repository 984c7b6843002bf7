package llm

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", -1},
		{"0", 0},
		{"7", 7 * time.Second},
		{" 2 ", 2 * time.Second},
		{"-3", -1},
		{"soon", -1},
		{now.Add(90 * time.Second).Format(httpTimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(httpTimeFormat), 0},
	}
	for _, tc := range cases {
		if got := retryAfter(tc.header, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

// httpTimeFormat is net/http's TimeFormat (IMF-fixdate), spelled out so the test reads alone.
const httpTimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"
