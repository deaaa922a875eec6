package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStatus is the part of /proc/<pid>/status the memory metrics use.
type ProcStatus struct {
	RSSKiB  int64 `json:"rss_kib"`
	Threads int   `json:"threads"`
	FDs     int   `json:"fds"`
}

// readProcStatus reads VmRSS and Threads from /proc/<pid>/status and counts
// /proc/<pid>/fd.
func readProcStatus(pid int) (ProcStatus, error) {
	var st ProcStatus
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			st.RSSKiB, _ = strconv.ParseInt(f[0], 10, 64)
		case "Threads":
			st.Threads, _ = strconv.Atoi(f[0])
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return st, err
	}
	st.FDs = len(ents)
	return st, nil
}

// procStat is the parsed head of /proc/<pid>/stat.
type procStat struct {
	Pid   int
	Comm  string
	State byte
	PPid  int
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// pid (comm) state ppid …; comm may contain spaces and parentheses.
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("bad stat for %d", pid)
	}
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 2 {
		return procStat{}, fmt.Errorf("bad stat for %d", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{Pid: pid, Comm: string(data[open+1 : end]), State: f[0][0], PPid: ppid}, nil
}

// descendants lists every live descendant of root.
func descendants(root int) []procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue
		}
		children[st.PPid] = append(children[st.PPid], st)
	}
	var out []procStat
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.Pid)
		}
	}
	return out
}

// procWchar returns the wchar counter of /proc/<pid>/io (bytes written).
func procWchar(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no wchar for %d", pid)
}

// Machine describes the host of a run.
type Machine struct {
	CPUs    int    `json:"cpus"`
	Kernel  string `json:"kernel"`
	LoadAvg string `json:"loadavg"`
	Go      string `json:"go"`
}

func readTrim(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
