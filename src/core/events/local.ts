/**
 * The id and URL prefix of receivers inside the server (event functions): they
 * are routed and delivered like webhooks, through the same outbox, but have no
 * webhook row and are delivered by a call instead of an HTTP request.
 */
export const LOCAL_RECEIVER = 'local:';
