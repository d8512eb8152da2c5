import { Type } from '@sinclair/typebox';

/** Forms of `/api/v1/utils` (routers/utils.py). */

export const GravatarQuery = Type.Object({ email: Type.String() });

export const CodeForm = Type.Object({ code: Type.String() });

export const FormattedCode = Type.Object({ code: Type.String() });

/** ChatTitleMessagesForm: the frontend sends the chat's title and its messages. */
export const ChatTitleMessagesForm = Type.Object({
  title: Type.String(),
  messages: Type.Array(Type.Object({}, { additionalProperties: true })),
});
