package controlplane

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one child process of the control plane. Children get Pdeathsig=SIGKILL so they die
// with the process that started them even when it is killed or panics before Stop runs: a test
// binary that crashes must not leave etcd and kube-apiserver behind.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startProc(dir, name, bin string, args []string, extraLog io.Writer) (*proc, error) {
	logPath := filepath.Join(dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	var out io.Writer = f
	if extraLog != nil {
		out = io.MultiWriter(f, &prefixWriter{prefix: name + ": ", w: extraLog})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks politely, then kills the whole process group.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last lines of the process log, for error messages that say why it failed.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type prefixWriter struct {
	prefix string
	w      io.Writer
	buf    bytes.Buffer
}

func (pw *prefixWriter) Write(b []byte) (int, error) {
	pw.buf.Write(b)
	for {
		line, err := pw.buf.ReadBytes('\n')
		if err != nil {
			pw.buf.Write(line) // incomplete line: keep for the next write
			break
		}
		if _, err := io.WriteString(pw.w, pw.prefix+string(line)); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}
