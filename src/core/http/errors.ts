/**
 * Errors thrown by services and shaped into `{"detail": ...}` in one place
 * (`server.ts`). Status codes and strings follow the reference, because the web
 * frontend shows `detail` to the user and clients match on it.
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

/**
 * The error object of OpenAI's API, sent beside `detail` on the OpenAI-compatible routes: the
 * official SDKs read `error.message` (without it they report "status code (no body)").
 */
export interface OpenAIError {
  message: string;
  type: string;
  code: string | null;
}

export function openAIError(status: number, detail: unknown): OpenAIError {
  return { message: messageOf(detail), type: openAIErrorType(status), code: null };
}

function openAIErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** One line for a `detail`: the string itself, a 422 list as `loc: msg` items, anything else as JSON. */
function messageOf(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((item: { loc?: unknown; msg?: unknown }) => (Array.isArray(item?.loc) ? `${item.loc.join('.')}: ${String(item.msg)}` : JSON.stringify(item)))
      .join('; ');
  }
  return JSON.stringify(detail);
}

export const badRequest = (detail: unknown) => new HttpError(400, detail);
export const unauthorized = (detail: unknown) => new HttpError(401, detail);
export const forbidden = (detail: unknown) => new HttpError(403, detail);
export const notFound = (detail: unknown = ERROR.NOT_FOUND) => new HttpError(404, detail);

/** The reference's user-facing messages (open_webui/constants.py ERROR_MESSAGES). */
export const ERROR = {
  DEFAULT: (err = '') => (err ? `[ERROR: ${err}]` : 'Something went wrong :/'),
  CREATE_USER_ERROR:
    'Oops! Something went wrong while creating your account. Please try again later. If the issue persists, contact support for assistance.',
  DELETE_USER_ERROR:
    'Oops! Something went wrong. We encountered an issue while trying to delete the user. Please give it another shot.',
  EMAIL_TAKEN:
    'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.',
  USERNAME_TAKEN: 'Uh-oh! This username is already registered. Please choose another username.',
  PASSWORD_TOO_LONG:
    'Uh-oh! The password you entered is too long. Please make sure your password is less than 72 bytes long.',
  ID_TAKEN: 'Uh-oh! This id is already registered. Please choose another id string.',
  INVALID_TOKEN: 'Your session has expired or the token is invalid. Please sign in again.',
  INVALID_CRED: 'The email or password provided is incorrect. Please check for typos and try logging in again.',
  INVALID_EMAIL_FORMAT:
    "The email format you entered is invalid. Please double-check and make sure you're using a valid email address (e.g., yourname@example.com).",
  INCORRECT_PASSWORD: 'The password provided is incorrect. Please check for typos and try again.',
  EXISTING_USERS:
    "You can't turn off authentication because there are existing users. If you want to disable WEBUI_AUTH, make sure your web interface doesn't have any existing users and is a fresh installation.",
  UNAUTHORIZED: '401 Unauthorized',
  ACCESS_PROHIBITED: 'You do not have permission to access this resource. Please contact your administrator for assistance.',
  ACTION_PROHIBITED: 'The requested action has been restricted as a security measure.',
  NOT_FOUND: "We could not find what you're looking for :/",
  USER_NOT_FOUND: "We could not find what you're looking for :/",
  API_KEY_NOT_FOUND:
    "Oops! It looks like there's a hiccup. The API key is missing. Please make sure to provide a valid API key to access this feature.",
  API_KEY_NOT_ALLOWED: 'Use of API key is not enabled in the environment.',
  MALICIOUS: 'Unusual activities detected, please try again in a few minutes.',
  INCORRECT_FORMAT: (err = '') => `Invalid format. Please use the correct format${err}`,
  RATE_LIMIT_EXCEEDED: 'API rate limit exceeded',
  CREATE_API_KEY_ERROR:
    'Oops! Something went wrong while creating your API key. Please try again later. If the issue persists, contact support for assistance.',
  API_KEY_CREATION_NOT_ALLOWED: 'API key creation is not allowed in the environment.',
  INVALID_PASSWORD: (err = '') => err || 'The password does not meet the required validation criteria.',
  INVALID_URL: 'The URL you provided is invalid. Please double-check and try again.',
  FEATURE_DISABLED: (name = '') => `${name} is disabled`,
  EMPTY_CONTENT: 'The content provided is empty. Please ensure that there is text or data present before proceeding.',
  FILE_TOO_LARGE: (size = '') => `Oops! The file you're trying to upload is too large. Please upload a file that is less than ${size}.`,
} as const;
