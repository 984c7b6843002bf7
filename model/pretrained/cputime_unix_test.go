//go:build unix

package pretrained

import "syscall"

// processCPUSeconds is the user+system CPU time of this process: on a shared machine it measures
// the work done whatever share of the wall clock other processes took.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
