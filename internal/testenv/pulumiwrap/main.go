// Command pulumiwrap stands in for the Pulumi CLI in tests that must see every mutating run:
// placed first (TFRS_TOOLS_BIN), it appends a "start" line to $TFRS_WRAP_LOG, then execs the
// real CLI ($TFRS_WRAP_REAL) in its own process, and a watcher appends the "end" line when that
// process exits. Exec, not fork: the engine records the pid it started as the lock's owner,
// and the CLI writes its own pid into the lock, so the two must be one process.
//
// Lines (one write each, O_APPEND, so processes on one machine never interleave):
//
//	start <id> <stack> <cmd> <unixnano> <pid> <pod>
//	end   <id> <stack> <cmd> <unixnano> <pid> <pod> ran|locked
//
// "locked" marks a run the backend lock refused (the CLI said the stack is currently locked):
// it started a process but mutated nothing. A run whose process was killed together with its
// watcher (a whole pod lost) has no end line; the test knows when that pod died.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	envReal  = "TFRS_WRAP_REAL"
	envLog   = "TFRS_WRAP_LOG"
	envWatch = "TFRS_WRAP_WATCH" // set on the watcher: "<id> <stack> <cmd> <pid>"
)

func main() {
	if w := os.Getenv(envWatch); w != "" {
		watch(w)
		return
	}
	real := os.Getenv(envReal)
	if real == "" {
		fmt.Fprintln(os.Stderr, "pulumiwrap: "+envReal+" is not set")
		os.Exit(2)
	}
	args := os.Args[1:]
	cmd, ok := mutating(args)
	if !ok {
		execReal(real, args)
	}
	stack := flagValue(args, "--stack", "-s")
	id := newID()
	pid := os.Getpid()
	logLine("start", id, stack, cmd, pid, "")

	// The watcher gets the CLI's stderr through a pipe (to tell a lock refusal) and this
	// process's stderr to pass it on; it says when it holds a pidfd, so the exit is never missed.
	errR, errW, err := os.Pipe()
	must(err)
	readyR, readyW, err := os.Pipe()
	must(err)
	self, err := os.Executable()
	must(err)
	w := exec.Command(self)
	w.Env = append(os.Environ(), envWatch+"="+strings.Join([]string{id, stack, cmd, strconv.Itoa(pid)}, " "))
	w.Stderr = os.Stderr
	w.ExtraFiles = []*os.File{errR, readyW} // fd 3, fd 4
	must(w.Start())
	errR.Close()
	readyW.Close()
	b := make([]byte, 1)
	if n, _ := readyR.Read(b); n != 1 {
		fmt.Fprintln(os.Stderr, "pulumiwrap: the watcher did not start")
		os.Exit(2)
	}
	readyR.Close()
	must(unix.Dup2(int(errW.Fd()), 2))
	errW.Close()
	execReal(real, args)
}

func execReal(real string, args []string) {
	err := syscall.Exec(real, append([]string{real}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "pulumiwrap: exec", real+":", err)
	os.Exit(2)
}

// watch waits for the CLI process to exit and writes the end line.
func watch(spec string) {
	parts := strings.Fields(spec)
	if len(parts) != 4 {
		os.Exit(2)
	}
	id, stack, cmd := parts[0], parts[1], parts[2]
	pid, _ := strconv.Atoi(parts[3])
	pfd, err := unix.PidfdOpen(pid, 0)
	must(err)
	ready := os.NewFile(4, "ready")
	_, _ = ready.Write([]byte{1})
	ready.Close()

	// Pass the CLI's stderr on, keeping enough of it to find Pulumi's lock refusal.
	cliErr := os.NewFile(3, "cli-stderr")
	var seen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := cliErr.Read(buf)
			if n > 0 {
				_, _ = os.Stderr.Write(buf[:n])
				if seen.Len() < 1<<20 {
					seen.Write(buf[:n])
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == nil && fds[0].Revents != 0 {
			break
		}
	}
	ended := time.Now()
	select {
	case <-copied:
	case <-time.After(5 * time.Second): // a plugin still holds the pipe: the text is in already
	}
	how := "ran"
	if strings.Contains(seen.String(), "currently locked") {
		how = "locked"
	}
	logLineAt("end", id, stack, cmd, pid, how, ended)
}

// mutating reports whether the CLI run can take the stack's lock and change its state (the
// engine's takesLock, plus cancel, which removes locks), and names it.
func mutating(args []string) (string, bool) {
	var words []string
	for i := 0; i < len(args) && len(words) < 2; i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if (a == "--stack" || a == "-s" || a == "--cwd" || a == "-C") && i+1 < len(args) {
				i++
			}
			continue
		}
		words = append(words, a)
	}
	if len(words) == 0 {
		return "", false
	}
	switch words[0] {
	case "up", "update", "refresh", "destroy", "import", "cancel":
		return words[0], true
	case "stack":
		if len(words) > 1 && (words[1] == "import" || words[1] == "rm" || words[1] == "rename") {
			return "stack-" + words[1], true
		}
	}
	return "", false
}

func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return "-"
}

func newID() string {
	b := make([]byte, 6)
	_, _ = io.ReadFull(rand.Reader, b)
	return hex.EncodeToString(b)
}

func logLine(kind, id, stack, cmd string, pid int, how string) {
	logLineAt(kind, id, stack, cmd, pid, how, time.Now())
}

func logLineAt(kind, id, stack, cmd string, pid int, how string, at time.Time) {
	pod := os.Getenv("POD_NAME")
	if pod == "" {
		pod = "-"
	}
	line := fmt.Sprintf("%s %s %s %s %d %d %s", kind, id, stack, cmd, at.UnixNano(), pid, pod)
	if how != "" {
		line += " " + how
	}
	f, err := os.OpenFile(os.Getenv(envLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	must(err)
	_, err = f.Write([]byte(line + "\n"))
	must(err)
	must(f.Close())
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pulumiwrap:", err)
		os.Exit(2)
	}
}
