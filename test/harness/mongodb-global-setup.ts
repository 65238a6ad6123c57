import type { TestProject } from "vitest/node";
import { mongoForTests } from "./mongo-java-server.js";

declare module "vitest" {
  interface ProvidedContext {
    /** The store URI e2e servers use by default in the `e2e-mongodb` project. */
    e2eStoreUri: string;
    /** Which store the project's servers must run on ("memory" or "mongodb"; set in vitest.config.ts). */
    e2eExpectedStore: string;
  }
}

/**
 * Global setup of the `e2e-mongodb` project: one MongoDB for the whole run
 * (`MONGODB_URI` when set, else mongo-java-server), handed to the tests as the
 * default `--store` of every server they start (each run uses its own database).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const mongo = await mongoForTests();
  const url = new URL(mongo.uri);
  url.pathname = `/agentd_e2e_${Date.now().toString(36)}`;
  project.provide("e2eStoreUri", url.toString());
  return () => mongo.stop();
}
