package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The harness's own arithmetic and readers: a wrong percentile or a misparsed metric would
// publish wrong numbers.

func TestPercentileAndMedian(t *testing.T) {
	s := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Second)
		}
		return out
	}
	ds := s(5, 1, 4, 2, 3, 10, 9, 8, 7, 6) // 1..10, unsorted
	assert.Equal(t, 5*time.Second, percentile(ds, 50))
	assert.Equal(t, 10*time.Second, percentile(ds, 95))
	assert.Equal(t, 1*time.Second, percentile(ds, 1))
	assert.Equal(t, 6*time.Second, median(ds)) // upper median of an even count
	assert.Equal(t, 2*time.Second, median(s(3, 1, 2)))
	assert.Equal(t, time.Duration(0), percentile(nil, 50))
	assert.Equal(t, s(5, 1, 4, 2, 3, 10, 9, 8, 7, 6), ds, "inputs must not be reordered")
}

func TestTable(t *testing.T) {
	var b strings.Builder
	table(&b, "T", "| a | b |", nil)
	assert.Empty(t, b.String(), "no rows, no section")
	table(&b, "T", "| a | b |", []string{"| 1 | 2 |", "| 3 | 4 |"})
	assert.Equal(t, "## T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n", b.String())
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`# HELP tfrs_operator_resync_skips_total x
# TYPE tfrs_operator_resync_skips_total counter
tfrs_operator_resync_skips_total{kind="TFRTenant"} 50
tfrs_operator_resync_skips_total{kind="TFRServer"} 7
tfrs_engine_cli_processes_total 3
tfrs_engine_cli_processes_total_other 99
tfrs_operator_operations_total{kind="TFRTenant",operation="up",result="succeeded"} 2.5e+01
`))
	}))
	defer srv.Close()
	m, err := scrape(context.Background(), srv.URL, mSkips, mCLI, mOps, mInFlight)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{mSkips: 57, mCLI: 3, mOps: 25}, m)
}

func TestProcReaders(t *testing.T) {
	st, err := readStat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), st.ppid)
	assert.Greater(t, treeRSS(os.Getpid()), int64(1<<20), "this test process holds more than 1 MiB")
	assert.Zero(t, treeRSS(1<<30), "no such process")
}
