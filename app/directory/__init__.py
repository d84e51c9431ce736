"""What OpenAI's app directory reads from the server when an app is submitted: the domain
verification token, and the privacy and terms pages, written from this server's own
configuration and from what each installed part says it keeps (docs/submission.md)."""
