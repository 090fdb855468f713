package sourcepolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Bucket is a tenant's bucket on an external S3-compatible endpoint, as the tenant program
// checks it.
type Bucket struct {
	// Endpoint is the S3 API's base URL (http(s)://host[:port]).
	Endpoint, Region, Name string
	AccessKey, SecretKey   string
	// Create makes the bucket when it does not exist; otherwise a missing bucket is an error.
	Create bool
}

// Limits of a bucket check.
const (
	// BucketTimeout bounds one check, its creation included.
	BucketTimeout = 30 * time.Second
	// maxS3Body bounds what an endpoint's answer may hold: S3 answers these calls with a few
	// hundred bytes, and a hostile endpoint must not make tfrs read without end.
	maxS3Body = 1 << 20
)

// ErrNoBucket: the bucket does not exist and the bucket policy does not create it.
var ErrNoBucket = errors.New("the bucket does not exist (bucketPolicy Existing: TFRS does not create it)")

// Endpoint decides on an object storage endpoint: an http(s) URL whose host URL allows (never
// file:// or oci://, which URL takes for other sources). The doors' check and the bucket
// check's connection both ask it.
func (p *Policy) Endpoint(raw string) error {
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return refuse("object storage endpoint", "must be an http(s) URL")
	}
	return p.URL(raw)
}

// EnsureBucket checks that b exists and creates it when it does not and b.Create. It
// connects through Policy.Client, so the endpoint's host must be allowed and every address
// it resolves to must pass, as for a fetched chart. created reports a creation. Errors never
// carry the credentials.
func (f *Fetcher) EnsureBucket(ctx context.Context, b Bucket) (created bool, err error) {
	if err := f.Policy.Endpoint(b.Endpoint); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, BucketTimeout)
	defer cancel()
	client := awss3.New(awss3.Options{
		Region:       b.Region,
		BaseEndpoint: aws.String(b.Endpoint),
		// Path-style addressing: every S3-compatible server takes it, and the bucket name
		// then never becomes part of the host the policy decided on.
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(b.AccessKey, b.SecretKey, ""),
		HTTPClient:       limitedBodies{f.client()},
		RetryMaxAttempts: 2,
	})
	_, err = client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(b.Name)})
	if err == nil {
		return false, nil
	}
	if !isNotFound(err) {
		return false, s3Error("check", err)
	}
	if !b.Create {
		return false, ErrNoBucket
	}
	in := &awss3.CreateBucketInput{Bucket: aws.String(b.Name)}
	if b.Region != "us-east-1" {
		// us-east-1 is S3's default location and takes no constraint (it refuses one).
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(b.Region)}
	}
	_, err = client.CreateBucket(ctx, in)
	var owned *s3types.BucketAlreadyOwnedByYou
	switch {
	case errors.As(err, &owned):
		return false, nil // made by someone with these credentials in between
	case err != nil:
		return false, s3Error("create", err)
	}
	return true, nil
}

// isNotFound: HeadBucket has no body, so a missing bucket is a 404 (NotFound or
// NoSuchBucket, by server).
func isNotFound(err error) bool {
	var nf *s3types.NotFound
	var nsb *s3types.NoSuchBucket
	var re *smithyhttp.ResponseError
	return errors.As(err, &nf) || errors.As(err, &nsb) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound)
}

// s3Error words a failed call: the HTTP status when there is one (403: the credentials may
// not), else the transport's error (a refused address, a timeout).
func s3Error(what string, err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe // refused by the policy when it connected
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() > 0 {
		switch re.HTTPStatusCode() {
		case http.StatusForbidden:
			return fmt.Errorf("%s: access denied (HTTP 403): the credentials may not %s this bucket", what, what)
		case http.StatusMovedPermanently:
			return fmt.Errorf("%s: the bucket is in another region (HTTP 301): set spec.objectStorage.external.region", what)
		}
		return fmt.Errorf("%s: HTTP %d", what, re.HTTPStatusCode())
	}
	return fmt.Errorf("%s: %w", what, errors.Unwrap(err))
}

// limitedBodies caps every response body at maxS3Body.
type limitedBodies struct{ c *http.Client }

func (l limitedBodies) Do(r *http.Request) (*http.Response, error) {
	resp, err := l.c.Do(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxS3Body), resp.Body}
	}
	return resp, err
}
