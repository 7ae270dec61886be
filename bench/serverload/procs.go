package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process: the reference server or a helper.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string        // its stderr (and the server's stdout)
	done    chan struct{} // closed when it has exited; then waitErr is set
	waitErr error

	// Helpers only: the control protocol (see roles.go).
	stdin io.WriteCloser
	lines chan string
}

// sysProcAttr puts a child in a process group of its own, so that a Ctrl-C
// in the terminal reaches only the bench, which then stops the children in
// order (the server before its database is dropped); and kills it if the
// bench dies without doing so.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// start starts cmd with its output in dir/<name>.log.
func start(name string, cmd *exec.Cmd, dir string) (*proc, error) {
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), logPath: filepath.Join(dir, name+".log")}
	f, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = f
	if cmd.Stdout == nil {
		cmd.Stdout = f
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail is the end of the process's output, for error messages.
func (p *proc) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	const keep = 4000
	if len(b) > keep {
		b = b[len(b)-keep:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// stop ends the process: SIGTERM, and SIGKILL if it has not exited after
// grace. It reports an unclean exit of a process that was asked to stop.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if p.stdin != nil {
		p.stdin.Close() // a helper exits when its stdin closes
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		var ee *exec.ExitError
		if p.waitErr != nil && !(errors.As(p.waitErr, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()) {
			return fmt.Errorf("%s exited with %v after SIGTERM", p.name, p.waitErr)
		}
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.name, grace)
	}
}

// startHelper starts this program again in a helper role and returns the
// address it listens on.
func startHelper(exe, dir, role string, args, env []string) (*proc, string, error) {
	cmd := exec.Command(exe, append([]string{"-role=" + role}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	p, err := start(role, cmd, dir)
	if err != nil {
		return nil, "", err
	}
	p.stdin = stdin
	p.lines = make(chan string)
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	f, err := p.expect("listening", 10*time.Second)
	if err != nil {
		p.stop(time.Second)
		return nil, "", err
	}
	if len(f) != 1 {
		p.stop(time.Second)
		return nil, "", fmt.Errorf("%s: bad listening line %q", role, f)
	}
	return p, f[0], nil
}

// expect reads the helper's next line, which must start with word.
func (p *proc) expect(word string, within time.Duration) ([]string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.done
			return nil, fmt.Errorf("%s exited (%v): %s", p.name, p.waitErr, p.logTail())
		}
		return parseHelperLine(line, word)
	case <-time.After(within):
		return nil, fmt.Errorf("%s did not answer within %s", p.name, within)
	}
}

// stats asks a helper for its counters.
func (p *proc) stats() (helperStats, error) {
	if _, err := io.WriteString(p.stdin, "stats\n"); err != nil {
		return helperStats{}, fmt.Errorf("%s: %w", p.name, err)
	}
	f, err := p.expect("stats", 10*time.Second)
	if err != nil {
		return helperStats{}, err
	}
	if len(f) != 2 {
		return helperStats{}, fmt.Errorf("%s: bad stats line %q", p.name, f)
	}
	var s helperStats
	var err1, err2 error
	s.Conns, err1 = strconv.ParseInt(f[0], 10, 64)
	s.Requests, err2 = strconv.ParseInt(f[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return helperStats{}, fmt.Errorf("%s: bad stats line %q: %w", p.name, f, err)
	}
	return s, nil
}

// findRepo returns the root of the connect module at or above dir.
func findRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == "github.com/embedauth/connect" {
					return d, nil
				}
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside the github.com/embedauth/connect module: run from the repository or pass -repo or -server-bin", dir)
		}
	}
}

// buildServer builds the reference server into dir and returns its path.
func buildServer(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "connect-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/server")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/server in %s: %v\n%s", repo, err, out)
	}
	return bin, nil
}

// environWithout is os.Environ() less the variables whose names start with
// one of the prefixes, so that the shell's settings do not leak into the
// server.
func environWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// waitHealthy polls the server's /health every poll until it answers 200
// or the server exits.
func waitHealthy(ctx context.Context, p *proc, base string, within, poll time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	var last string
	for {
		if p.exited() {
			return fmt.Errorf("the server exited before it was healthy (%v):\n%s", p.waitErr, p.logTail())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not answer GET /health within %s (last: %s):\n%s", within, last, p.logTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
