import type { z } from "zod";

/** Where a zod issue points, as a dotted path (`tasks.0.title`), or `(root)` for the value itself. */
export function zodIssuePath(issue: z.core.$ZodIssue): string {
  return issue.path.length > 0 ? issue.path.join(".") : "(root)";
}

/** A zod error as one line a user can act on: `path: message; path: message`. */
export function describeZodError(error: z.ZodError): string {
  return error.issues.map((issue) => `${zodIssuePath(issue)}: ${issue.message}`).join("; ");
}
