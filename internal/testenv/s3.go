package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// S3Server is a versitygw process serving one bucket from a temporary directory: the shared
// state backend of tests that run several tfrs processes.
type S3Server struct {
	Addr, Bucket, Access, Secret string
}

// S3 starts versitygw for the test (stopped at cleanup). It skips (fails under CI=true) when
// `make tools` has not built versitygw.
func S3(t testing.TB) *S3Server {
	t.Helper()
	bin, err := tools.Bin("versitygw")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	s := &S3Server{Bucket: "tfrs-state", Access: "tfrstest", Secret: "tfrstestsecret123"}
	if err := os.MkdirAll(filepath.Join(dir, s.Bucket), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--port", s.Addr, "--access", s.Access, "--secret", s.Secret, "posix", dir)
	log, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s", s.Addr)
		}
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
