/**
 * Outbound HTTP for webhooks and HTTP tools: request signing, the address policy for
 * customer-given URLs, and an SSRF-safe POST client. See docs/outbound-http.md.
 */
export {
  SIGNATURE_HEADER,
  SECRET_PREFIX,
  DEFAULT_TOLERANCE_SECONDS,
  signPayload,
  verifySignature,
  checkSignature,
  generateSecret,
  type SignatureCheck,
  type SignatureFailure,
  type VerifyOptions,
} from './signature';
export {
  isPublicAddress,
  checkUrlForRegistration,
  checkUrlShape,
  systemResolver,
  type HostResolver,
  type UrlCheck,
  type UrlPolicyOptions,
  type RegistrationCheckOptions,
} from './address-policy';
export {
  createSafeHttpClient,
  safePost,
  AddressRefusedError,
  type SafeHttpClient,
  type SafeHttpClientOptions,
  type SafePostOptions,
  type SafePostOnceOptions,
  type SafePostResult,
  type SafePostErrorCode,
} from './safe-post';
