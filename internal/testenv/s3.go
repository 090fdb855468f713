package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// S3Server is a versitygw process serving one bucket from a directory: the shared state
// backend of tests that run several tfrs processes, or several engines.
type S3Server struct {
	Addr, Bucket, Access, Secret string
	// Dir holds the buckets, one directory each.
	Dir string
	cmd *exec.Cmd
	log *os.File
}

// S3 starts versitygw for the test (stopped at cleanup). It skips (fails under CI=true) when
// `make tools` has not built versitygw.
func S3(t testing.TB) *S3Server {
	t.Helper()
	if _, err := tools.Bin("versitygw"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	s, err := StartS3(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartS3 starts versitygw serving dir (its bucket a sub-directory, its log beside it) and
// waits until it listens; the caller stops it. For servers shared by a whole test binary.
func StartS3(dir string) (*S3Server, error) {
	bin, err := tools.Bin("versitygw")
	if err != nil {
		return nil, err
	}
	s := &S3Server{Bucket: "tfrs-state", Access: "tfrstest", Secret: "tfrstestsecret123", Dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, s.Bucket), 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s.cmd = exec.Command(bin, "--port", s.Addr, "--access", s.Access, "--secret", s.Secret, "posix", dir)
	if s.log, err = os.Create(filepath.Join(dir, "versitygw.log")); err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.log.Close()
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("versitygw did not listen on %s", s.Addr)
		}
	}
}

// Stop kills the server.
func (s *S3Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	if s.log != nil {
		s.log.Close()
	}
}

// BackendURL is the Pulumi backend URL of the bucket.
func (s *S3Server) BackendURL() string {
	return "s3://" + s.Bucket + "?endpoint=" + s.Addr + "&disableSSL=true&s3ForcePathStyle=true&region=us-east-1"
}

// Env is what a process needs to reach the bucket (KEY=VALUE).
func (s *S3Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=us-east-1"}
}
