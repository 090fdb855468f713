# The tfrs image for those who build with a container daemon; `make image` (hack/image) builds
# the same image without one: the same paths, user, environment and labels. The tfrs binary
# with the Pulumi CLI and the Kubernetes provider next to it. Every binary is built from
# source through the Go module proxy (GOPROXY, overridable for a mirror); nothing is
# downloaded at run time, and the tools are built by the same script as `make tools`
# (hack/tools/build.sh), so the image runs exactly the versions the tests ran.
#
#   docker build --build-arg VERSION=v0.9.0 --build-arg COMMIT="$(git rev-parse --short=12 HEAD)" \
#     -t ghcr.io/tfrs-io/tfrs:v0.9.0 .
#   docker build --build-arg GOPROXY=https://goproxy.cn,direct ...   # mainland China

ARG GO_VERSION=1.26

# Tools first: this stage depends on hack/tools only, so source changes never rebuild the
# Pulumi CLI (~10 CPU-minutes) or the provider.
FROM golang:${GO_VERSION}-bookworm AS tools
ARG GOPROXY
ENV GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} \
    TFRS_TOOLS_CACHE=/tools
WORKDIR /src
COPY hack/tools/ hack/tools/
RUN bash hack/tools/build.sh pulumi >/dev/null \
 && bash hack/tools/build.sh provider >/dev/null \
 && mkdir -p /out \
 && bin="$(bash hack/tools/build.sh --dir)" \
 && cp -L "$bin/pulumi" "$bin/pulumi-resource-kubernetes" /out/

FROM golang:${GO_VERSION}-bookworm AS build
ARG GOPROXY
ENV GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# What `tfrs version` prints (the Makefile's ldflags; .git is not in the build context).
ARG VERSION=v0.9.0
ARG COMMIT=
RUN go build -trimpath -ldflags "-s -w -X main.tfrsVersion=${VERSION} -X main.tfrsCommit=${COMMIT}" \
      -o /out/tfrs ./cmd/tfrs

# Static binaries only: no shell, no package manager. CA certificates for s3:// backends and
# https chart repositories, /etc/passwd with nonroot (65532, HOME /home/nonroot) and a sticky
# /tmp come with the base image; hack/image writes the same files.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=v0.9.0
ARG COMMIT=
LABEL org.opencontainers.image.title=tfrs \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT} \
      org.opencontainers.image.source=https://github.com/tfrs-io/tfrs-operator
COPY --from=tools /out/ /usr/local/bin/
COPY --from=build /out/tfrs /usr/local/bin/tfrs
# The engine looks for the Pulumi CLI and the provider here (internal/tools).
ENV PATH=/usr/local/bin \
    HOME=/home/nonroot \
    TFRS_TOOLS_BIN=/usr/local/bin \
    PULUMI_SKIP_UPDATE_CHECK=true
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tfrs"]
CMD ["operator"]
