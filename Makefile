# Developer entry points. `make test` is what CI runs (.ci/run).
GO        ?= go
BIN       := bin/codex
STATICCHECK_VERSION := v0.8.2

.PHONY: build run test flake bench realclient realclient-mcp patched-bash lint fmt clean schema

# The version printed by `codex --version`: the nearest tag, commits since
# and the commit (`git describe`), "-dirty" for local changes. Without git
# (CODEX_VERSION empty) the binary reads its build information instead.
CODEX_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

build:
	CGO_ENABLED=0 $(GO) build -tags urfave_cli_no_docs -ldflags "-X github.com/codexec/codex/cli.version=$(CODEX_VERSION)" -o $(BIN) .

# Builds and starts a server on an ephemeral loopback port; prints its URL.
run: build
	./$(BIN) exec-server --listen ws://127.0.0.1:0

# The CI suite: vet, then every test with the race detector and leak checks
# (about 3.5 minutes on two otherwise idle cores of the development VM, 12 on
# the slower CI runner before the e2e waits were cut; the e2e package, which
# runs the others beside it, takes most of it: see docs/development.md §1).
# The patched Bash of the MCP shell tool's wrapper mode is installed first
# (npm, outside the repository); the unit tests that need it read its path
# from CODEX_TEST_PATCHED_BASH and skip, saying why, when npm cannot be reached.
test:
	$(GO) vet ./...
	CODEX_TEST_PATCHED_BASH="$$(./scripts/patched-bash.sh || true)" $(GO) test -race -count=1 -timeout 30m ./...

# Regenerates the committed JSON Schema of the protocol (schema/) from the
# Go types of package wire; the schema package's test fails until it is run
# after a protocol change.
schema:
	$(GO) run -tags urfave_cli_no_docs . exec-server generate-json-schema --out schema

# Repeated runs of the process-heavy packages, to shake out flakes (by hand).
flake:
	$(GO) test -race -count=20 -timeout 30m ./proc/ ./execserver/ ./e2e/

# Side by side with the reference Codex CLI 0.169.0 (installed with npm on
# first use, outside the repository). Pass BENCH_ARGS=-quick for a short run.
bench: build
	./scripts/bench.sh $(BENCH_ARGS)

# The real Codex CLI 0.169.0 drives our server: WebSocket, resume, stdio.
realclient: build
	./scripts/realclient.sh

# The patched Bash of @openai/codex-shell-tool-mcp@0.97.0 for the wrapper mode
# (installed with npm outside the repository on first use); prints its path.
patched-bash:
	@./scripts/patched-bash.sh

# The real Codex CLI 0.169.0 drives our MCP shell tool (exec-mcp-server) in every
# sandbox mode: the default (kernel-level interception, every check counts), then
# --intercept wrapper with the npm patched Bash. REALCLIENT_MCP_ARGS overrides the modes.
realclient-mcp: build
	./scripts/realclient.sh --mcp $(REALCLIENT_MCP_ARGS)
	./scripts/realclient.sh --mcp-wrapper $(REALCLIENT_MCP_ARGS)

lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
