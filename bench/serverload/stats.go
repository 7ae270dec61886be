package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value that at least p % of the values
// do not exceed. It is 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// spread is the median, minimum and maximum of a set of figures (one per
// round).
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf returns the median (the mean of the middle two for an even
// count), minimum and maximum of vs; all zero for none.
func spreadOf(vs []float64) spread {
	if len(vs) == 0 {
		return spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports: the kernel scales its internal
// tick to it for user space).
const userHZ = 100

// parseProcStat returns the user and system CPU time of a process from the
// contents of its /proc/<pid>/stat (proc(5): utime and stime are fields 14
// and 15, in clock ticks). The second field, the command name in
// parentheses, may itself hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// processCPU is the user+system CPU time a process has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	d, err := parseProcStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// perRequest is d spread over n requests, in microseconds.
func perRequest(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(n)
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// memStats are the memory figures of a process, in KiB, from
// /proc/<pid>/status.
type memStats struct {
	// RSSKiB is VmRSS, the resident memory.
	RSSKiB int64 `json:"vm_rss_kib"`
	// HWMKiB is VmHWM, the most resident memory since the process started.
	HWMKiB int64 `json:"vm_hwm_kib"`
	// AnonKiB is RssAnon, the resident memory that is the process's own
	// (not a file's pages or shared memory).
	AnonKiB int64 `json:"rss_anon_kib"`
}

// parseProcStatus reads the memory figures of the contents of a
// /proc/<pid>/status (proc(5): lines such as "VmRSS:\t  123456 kB").
func parseProcStatus(b []byte) (memStats, error) {
	var m memStats
	found := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &m.RSSKiB
		case "VmHWM":
			dst = &m.HWMKiB
		case "RssAnon":
			dst = &m.AnonKiB
		default:
			continue
		}
		f := bytes.Fields(value)
		if len(f) != 2 || string(f[1]) != "kB" {
			return m, fmt.Errorf("%s: %q is not a number of kB", name, value)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		*dst = n
		found++
	}
	if found != 3 {
		return m, errors.New("no VmRSS, VmHWM and RssAnon lines")
	}
	return m, nil
}

// procMemory returns the memory figures of a process.
func procMemory(pid int) (memStats, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memStats{}, err
	}
	m, err := parseProcStatus(b)
	if err != nil {
		return m, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return m, nil
}

// mib formats KiB as MiB.
func mib(kib int64) string {
	if kib < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64)
}
