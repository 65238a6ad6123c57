/**
 * The Go client as a Go user consumes it before the repository is published:
 * a module outside the repository requires `github.com/agentd-dev/agentd/clients/go`
 * and `…/gen/go` at the version the release tags will carry, with `replace`
 * directives pointing at this checkout (exactly what the README's Go install
 * says works today), and builds and runs against them.
 */
import { execFile as execFileCallback } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";

const execFile = promisify(execFileCallback);

const MAIN_GO = `package main

import (
	"fmt"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func main() {
	client := agentd.NewClient("http://127.0.0.1:50051")
	fmt.Println(client != nil, agentdv1.Role_ROLE_USER)
}
`;

// Go is a prerequisite of the test command (the Go client's own tests need it too): no skip.
describe("the Go client from a checkout (replace directives)", { timeout: 180_000 }, () => {
  it("requires the tagged version of clients/go and gen/go; the replace in clients/go/go.mod is only for the repository", async () => {
    const clientMod = await readFile(join(REPO_ROOT, "clients/go/go.mod"), "utf8");
    expect(clientMod).toMatch(/^module github\.com\/agentd-dev\/agentd\/clients\/go$/m);
    const genMod = await readFile(join(REPO_ROOT, "gen/go/go.mod"), "utf8");
    expect(genMod).toMatch(/^module github\.com\/agentd-dev\/agentd\/gen\/go$/m);
    // A consumer ignores clients/go's replace, so its require must name a real (tagged) version.
    const required = /github\.com\/agentd-dev\/agentd\/gen\/go (v\S+)/.exec(clientMod)?.[1];
    expect(required).toMatch(/^v\d+\.\d+\.\d+$/);

    const dir = await mkdtemp(join(tmpdir(), "agentd-go-user-"));
    try {
      const run = (args: string[]) =>
        execFile("go", args, {
          cwd: dir,
          env: { ...process.env, GOFLAGS: "-mod=mod", GOWORK: "off" },
          timeout: 170_000,
        });
      await run(["mod", "init", "example.com/svc"]);
      await run([
        "mod",
        "edit",
        `-require=github.com/agentd-dev/agentd/clients/go@${required}`,
        `-require=github.com/agentd-dev/agentd/gen/go@${required}`,
        `-replace=github.com/agentd-dev/agentd/clients/go=${join(REPO_ROOT, "clients/go")}`,
        `-replace=github.com/agentd-dev/agentd/gen/go=${join(REPO_ROOT, "gen/go")}`,
      ]);
      await writeFile(join(dir, "main.go"), MAIN_GO);
      // The checksums of the client's own dependencies (so this works offline from the module cache).
      await copyFile(join(REPO_ROOT, "clients/go/go.sum"), join(dir, "go.sum"));
      const { stdout } = await run(["run", "."]);
      expect(stdout.trim()).toBe("true ROLE_USER");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
