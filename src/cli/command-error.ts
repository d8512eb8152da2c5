/** Stops a command with a message for the operator (shown without a stack trace, exit status 2). */
export class CommandError extends Error {}
