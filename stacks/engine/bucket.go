package engine

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"
)

// The engine reads and writes a few objects of the state backend itself (lock owner records,
// the one stale lock it breaks), through the same blob library, at the same version, that the
// Pulumi CLI uses for its DIY backend (gocloud.dev), opened the way the CLI opens it: the same
// bucket, the same key prefix, the same legacy s3 parameters. A key the engine computes is
// therefore the key the CLI wrote.

// bucket opens the backend once per engine; the error is kept, so a misconfigured backend
// fails every lock decision the same way (they then fall back to "not provably gone").
func (e *Engine) bucket(ctx context.Context) (*blob.Bucket, error) {
	e.bucketOnce.Do(func() {
		e.bkt, e.bktErr = openBackendBucket(ctx, e.opts.BackendURL, e.opts.Env)
	})
	return e.bkt, e.bktErr
}

// bucketState is the lazily opened backend bucket (see (*Engine).bucket).
type bucketState struct {
	bucketOnce sync.Once
	bkt        *blob.Bucket
	bktErr     error
}

// openBackendBucket opens a file:// or s3:// backend URL. env supplies credentials exactly as
// the CLI gets them (Options.Env: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION); without them the AWS default chain of this process applies, as for the CLI.
func openBackendBucket(ctx context.Context, backendURL string, env map[string]string) (*blob.Bucket, error) {
	u, err := url.Parse(backendURL)
	if err != nil {
		return nil, fmt.Errorf("backend URL: %w", err)
	}
	switch u.Scheme {
	case "file":
		return fileblob.OpenBucket(u.Path, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	case "s3":
		return openS3Bucket(ctx, u, env)
	}
	return nil, fmt.Errorf("backend scheme %q: the engine reads file:// and s3:// backends only", u.Scheme)
}

func openS3Bucket(ctx context.Context, u *url.URL, env map[string]string) (*blob.Bucket, error) {
	q := u.Query()
	// The CLI's legacy parameters (diy.translateLegacyS3Params): disableSSL and an endpoint
	// without a scheme.
	disableSSL := false
	if v := q.Get("disableSSL"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("backend URL: disableSSL: %w", err)
		}
		disableSSL = b
		q.Del("disableSSL")
	}
	var s3opts []func(*awss3.Options)
	if ep := q.Get("endpoint"); ep != "" {
		if !strings.Contains(ep, "://") {
			scheme := "https"
			if disableSSL {
				scheme = "http"
			}
			q.Set("endpoint", scheme+"://"+ep)
		}
		if q.Get("request_checksum_calculation") == "" {
			q.Set("request_checksum_calculation", "when_required")
		}
	}
	for _, k := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(k); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("backend URL: %s: %w", k, err)
			}
			s3opts = append(s3opts, func(o *awss3.Options) { o.UsePathStyle = b })
			q.Del(k)
		}
	}
	if v := q.Get("disable_https"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("backend URL: disable_https: %w", err)
		}
		s3opts = append(s3opts, func(o *awss3.Options) { o.EndpointOptions.DisableHTTPS = b })
		q.Del("disable_https")
	}
	if q.Get("region") == "" && env["AWS_REGION"] != "" {
		q.Set("region", env["AWS_REGION"])
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("backend URL: %w", err)
	}
	if id := env["AWS_ACCESS_KEY_ID"]; id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])
	}
	b, err := s3blob.OpenBucket(ctx, awss3.NewFromConfig(cfg, s3opts...), u.Host,
		&s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	if err != nil {
		return nil, err
	}
	// Like the CLI: the URL's path is a key prefix inside the bucket.
	if sub := strings.Trim(u.Path, "/"); sub != "" {
		b = blob.PrefixedBucket(b, sub+"/")
	}
	return b, nil
}

// Bucket is the state backend as a blob bucket, for callers that keep their own objects beside
// the stacks (the HTTP API's specs and operations under tfrs/api/), opened exactly as the
// engine and the CLI open it. The engine owns it: Close closes it.
func (e *Engine) Bucket(ctx context.Context) (*blob.Bucket, error) { return e.bucket(ctx) }
