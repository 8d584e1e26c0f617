// The frame authenticator against an independent GMAC (GHASH written here
// from the GCM specification, AES-128 from OpenSSL's ECB), itself pinned by a
// NIST CAVS vector; the nonce layout; and the properties the engine relies on:
// every changed byte, nonce field or key fails verification.
#include "core/protocol/auth.h"
#include "core/runtime/auth_key.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstring>
#include <vector>

namespace ibbcast {
namespace {

using Block = std::array<uint8_t, 16>;

std::vector<uint8_t> hex(const char* s) {
  std::vector<uint8_t> v;
  for (; s[0] != '\0' && s[1] != '\0'; s += 2)
    v.push_back(static_cast<uint8_t>(std::stoi(std::string(s, 2), nullptr, 16)));
  return v;
}

Block aes_block(const uint8_t key[16], const Block& in) {
  Block out{};
  int len = 0;
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), nullptr, key, nullptr);
  EVP_CIPHER_CTX_set_padding(c, 0);
  EVP_EncryptUpdate(c, out.data(), &len, in.data(), 16);
  EVP_CIPHER_CTX_free(c);
  return out;
}

// GF(2^128) product of the GCM spec (Algorithm 1), bit by bit.
Block gf_mul(const Block& x, const Block& y) {
  Block z{}, v = y;
  for (int i = 0; i < 128; ++i) {
    if ((x[i / 8] >> (7 - i % 8)) & 1)
      for (int k = 0; k < 16; ++k)
        z[k] ^= v[k];
    const bool lsb = v[15] & 1;
    for (int k = 15; k > 0; --k)
      v[k] = static_cast<uint8_t>((v[k] >> 1) | (v[k - 1] << 7));
    v[0] >>= 1;
    if (lsb) v[0] ^= 0xe1;
  }
  return z;
}

// GMAC = E_K(IV || 0^31 1) xor GHASH_H(A padded || len(A) || 0), H = E_K(0^128).
Block reference_gmac(const uint8_t key[16], const uint8_t iv[12], const std::vector<uint8_t>& a) {
  const Block h = aes_block(key, Block{});
  Block y{};
  auto absorb = [&](const uint8_t* p, std::size_t n) {
    Block b{};
    std::memcpy(b.data(), p, n);
    for (int k = 0; k < 16; ++k)
      y[k] ^= b[k];
    y = gf_mul(y, h);
  };
  for (std::size_t off = 0; off < a.size(); off += 16)
    absorb(a.data() + off, std::min<std::size_t>(16, a.size() - off));
  Block len{};
  const uint64_t bits = uint64_t{a.size()} * 8;
  for (int k = 0; k < 8; ++k)
    len[7 - k] = static_cast<uint8_t>(bits >> (8 * k));
  absorb(len.data(), 16);
  Block j0{};
  std::memcpy(j0.data(), iv, 12);
  j0[15] = 1;
  const Block ek = aes_block(key, j0);
  for (int k = 0; k < 16; ++k)
    y[k] ^= ek[k];
  return y;
}

TEST(Auth, ReferenceGmacMatchesTheNistVector) {
  // gcmEncryptExtIV128.rsp, [PTlen = 0, AADlen = 128], Count = 0.
  auto key = hex("77be63708971c4e240d1cb79e8d77feb");
  auto iv = hex("e0e00f19fed7ba0136a797f3");
  auto aad = hex("7a43ec1d9c0a5a78a0b16533a6213cab");
  auto tag = hex("209fcc8d3675ed938e9c7166709dd946");
  Block got = reference_gmac(key.data(), iv.data(), aad);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()), tag);
}

TEST(Auth, NonceLayoutIsSeqFragRoot) {
  AuthNonce n{0x0102030405, 0xA1B2C3D4, 0x123456};
  auto iv = auth_iv(n);
  const uint8_t want[12] = {0x01, 0x02, 0x03, 0x04, 0x05, 0xA1, 0xB2, 0xC3, 0xD4, 0x12, 0x34, 0x56};
  EXPECT_EQ(std::memcmp(iv.data(), want, 12), 0);
}

TEST(Auth, TheTagCoversTheHeaderWithoutItsChannelBit) {
  std::array<std::byte, kHeaderSize> h{};
  h[3] = std::byte{kFlagReliable | kFlagAuthTag | kFlagCrc};
  h[40] = std::byte{9};
  auto c = auth_header(h);
  EXPECT_EQ(c[3], std::byte{kFlagAuthTag | kFlagCrc});
  c[3] = h[3];
  EXPECT_EQ(c, h);
}

struct Fixture {
  AuthKey key{};
  std::array<std::byte, kHeaderSize> header{};
  std::vector<std::byte> payload;
  AuthNonce nonce{77, 3, 5};
  Fixture() {
    for (std::size_t i = 0; i < key.size(); ++i)
      key[i] = std::byte(0x40 + i);
    for (std::size_t i = 0; i < header.size(); ++i)
      header[i] = std::byte(i * 3);
    payload.resize(1000 + 7);
    for (std::size_t i = 0; i < payload.size(); ++i)
      payload[i] = std::byte((i * 13 + 1) & 0xff);
  }
};

TEST(Auth, TagIsGmacOfHeaderAndPayloadUnderTheNonce) {
  Fixture f;
  auto auth = make_frame_auth(f.key);
  ASSERT_TRUE(auth.is_ok()) << auth.status().to_string();
  std::array<std::byte, kAuthTagSize> tag{};
  (*auth)->tag(f.nonce, f.header, f.payload, tag);
  std::vector<uint8_t> aad(kHeaderSize + f.payload.size());
  std::memcpy(aad.data(), f.header.data(), kHeaderSize);
  std::memcpy(aad.data() + kHeaderSize, f.payload.data(), f.payload.size());
  auto iv = auth_iv(f.nonce);
  Block want = reference_gmac(reinterpret_cast<const uint8_t*>(f.key.data()),
                              reinterpret_cast<const uint8_t*>(iv.data()), aad);
  EXPECT_EQ(std::memcmp(tag.data(), want.data(), 16), 0);
  EXPECT_TRUE((*auth)->verify(f.nonce, f.header, f.payload, tag));
}

TEST(Auth, EveryChangedByteNonceFieldOrKeyFails) {
  Fixture f;
  auto auth = make_frame_auth(f.key);
  ASSERT_TRUE(auth.is_ok());
  std::array<std::byte, kAuthTagSize> tag{};
  (*auth)->tag(f.nonce, f.header, f.payload, tag);
  for (std::size_t i = 0; i < kHeaderSize; ++i) {
    auto h = f.header;
    h[i] ^= std::byte{0x01};
    EXPECT_FALSE((*auth)->verify(f.nonce, h, f.payload, tag)) << "header byte " << i;
  }
  for (std::size_t i = 0; i < f.payload.size(); i += 37) {
    auto p = f.payload;
    p[i] ^= std::byte{0x80};
    EXPECT_FALSE((*auth)->verify(f.nonce, f.header, p, tag)) << "payload byte " << i;
  }
  auto shorter = std::span<const std::byte>(f.payload).first(f.payload.size() - 1);
  EXPECT_FALSE((*auth)->verify(f.nonce, f.header, shorter, tag));
  for (std::size_t i = 0; i < kAuthTagSize; ++i) {
    auto t = tag;
    t[i] ^= std::byte{0x04};
    EXPECT_FALSE((*auth)->verify(f.nonce, f.header, f.payload, t)) << "tag byte " << i;
  }
  const AuthNonce others[] = {{78, 3, 5}, {77, 4, 5}, {77, 3, 6}, {77 + (uint64_t{1} << 32), 3, 5}};
  for (const AuthNonce& n : others)
    EXPECT_FALSE((*auth)->verify(n, f.header, f.payload, tag)) << "seq " << n.seq;
  AuthKey other = f.key;
  other[15] ^= std::byte{1};
  auto auth2 = make_frame_auth(other);
  ASSERT_TRUE(auth2.is_ok());
  EXPECT_FALSE((*auth2)->verify(f.nonce, f.header, f.payload, tag));
}

TEST(Auth, RandomKeysDiffer) {
  auto a = random_auth_key(), b = random_auth_key();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(*a, *b);
  EXPECT_NE(*a, AuthKey{});
}

}  // namespace
}  // namespace ibbcast
