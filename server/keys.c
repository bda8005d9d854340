/*
 * keys.c — the keys of `heapgraph serve`: "hgk_<key_id>_<secret>" with a
 * 16-hex-digit public id and a 128-bit random secret (32 hex digits). The
 * store keeps only the id and "sha256$<salt>$<digest>" (SHA-256 of the
 * salt followed by the secret, GnuTLS); verification compares digests in
 * constant time. A slow hash adds nothing for 128 random bits.
 */
#include <gnutls/crypto.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "server/serve.h"

static void hex(char *out, const unsigned char *in, size_t n) {
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", in[i]);
}

static int random_hex(char *out, size_t bytes) {
  unsigned char rnd[32];
  if (bytes > sizeof rnd || getrandom(rnd, bytes, 0) != (ssize_t)bytes) return -1;
  hex(out, rnd, bytes);
  return 0;
}

static int digest(const char *salt, const char *secret, char out[65]) {
  char buf[160];
  int n = snprintf(buf, sizeof buf, "%s%s", salt, secret);
  unsigned char d[32];
  if (n < 0 || (size_t)n >= sizeof buf || gnutls_hash_fast(GNUTLS_DIG_SHA256, buf, (size_t)n, d) < 0) return -1;
  hex(out, d, sizeof d);
  return 0;
}

int srv_key_new(char key[SRV_KEY_MAX], char key_id[SRV_KEYID_MAX], char hash[SRV_HASH_MAX]) {
  char secret[65], salt[33], d[65];
  if (random_hex(key_id, 8) || random_hex(secret, 16) || random_hex(salt, 16) || digest(salt, secret, d)) return -1;
  snprintf(key, SRV_KEY_MAX, "hgk_%s_%s", key_id, secret);
  snprintf(hash, SRV_HASH_MAX, "sha256$%s$%s", salt, d);
  return 0;
}

int srv_key_parse(const char *key, char key_id[SRV_KEYID_MAX], const char **secret) {
  if (!key || strncmp(key, "hgk_", 4)) return -1;
  const char *id = key + 4, *us = strchr(id, '_');
  size_t n = us ? (size_t)(us - id) : 0;
  if (!n || n >= SRV_KEYID_MAX || strlen(us + 1) < 16 || strlen(us + 1) > 64) return -1;
  for (const char *p = id; p < us; p++)
    if (!strchr("0123456789abcdef", *p)) return -1;
  memcpy(key_id, id, n);
  key_id[n] = 0;
  *secret = us + 1;
  return 0;
}

int srv_key_verify(const char *secret, const char *hash) {
  char salt[65], d[65];
  if (strncmp(hash, "sha256$", 7)) return 0;
  const char *s = hash + 7, *dollar = strchr(s, '$');
  if (!dollar || (size_t)(dollar - s) >= sizeof salt || strlen(dollar + 1) != 64) return 0;
  memcpy(salt, s, (size_t)(dollar - s));
  salt[dollar - s] = 0;
  if (digest(salt, secret, d)) return 0;
  unsigned diff = 0;
  for (int i = 0; i < 64; i++) diff |= (unsigned)(unsigned char)d[i] ^ (unsigned char)dollar[1 + i];
  return diff == 0;
}

const char *srv_bearer(const char *authorization) {
  if (!authorization || strncasecmp(authorization, "Bearer ", 7)) return NULL;
  const char *k = authorization + 7;
  while (*k == ' ') k++;
  return *k ? k : NULL;
}
