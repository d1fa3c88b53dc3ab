#include "common/dev_certs.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/secret_file.h"
#include "common/text_util.h"

namespace ristretto {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

// kInternal naming `step` and libcrypto's first queued error (the queue is
// cleared: a later step must not report this one).
absl::Status CryptoError(const std::string& step) {
  const unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int)
  std::array<char, 256> text{};
  if (code != 0) ERR_error_string_n(code, text.data(), text.size());
  ERR_clear_error();
  return absl::InternalError(absl::StrCat(
      "making the TLS certificates: ", step, " failed",
      code != 0 ? absl::StrCat(": ", text.data()) : std::string()));
}

absl::StatusOr<Pkey> NewP256Key() {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr));
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx.get(), NID_X9_62_prime256v1) <=
          0 ||
      EVP_PKEY_keygen(ctx.get(), &key) <= 0) {
    return CryptoError("generating a P-256 key");
  }
  return Pkey(key);
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid,
                          const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return CryptoError(absl::StrCat("adding ", OBJ_nid2sn(nid), "=", value));
  }
  return absl::OkStatus();
}

struct CertSpec {
  std::string common_name;
  bool ca = false;
  std::string extended_key_usage;  // "" for the CA
  std::string subject_alt_names;   // "" for none
};

// A certificate for `key` signed by `issuer_key` (`issuer` null:
// self-signed), valid from an hour ago (clock skew between processes) for
// `days` days, with a random 127-bit serial number.
absl::StatusOr<Cert> Issue(const CertSpec& spec, EVP_PKEY* key, X509* issuer,
                           EVP_PKEY* issuer_key, int days) {
  Cert cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), 2) != 1) {
    return CryptoError("creating a certificate");
  }
  std::array<unsigned char, 16> serial{};
  if (RAND_bytes(serial.data(), static_cast<int>(serial.size())) != 1) {
    return CryptoError("drawing a serial number");
  }
  serial[0] &= 0x7f;  // positive
  std::unique_ptr<BIGNUM, BnFree> bn(
      BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr));
  if (bn == nullptr ||
      BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) ==
          nullptr) {
    return CryptoError("setting the serial number");
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()),
                      static_cast<long>(days) * 86400) ==  // NOLINT
          nullptr ||
      X509_set_pubkey(cert.get(), key) != 1 ||
      X509_NAME_add_entry_by_txt(
          subject, "CN", MBSTRING_UTF8,
          reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
          -1, 0) != 1 ||
      X509_set_issuer_name(
          cert.get(),
          issuer == nullptr ? subject : X509_get_subject_name(issuer)) != 1) {
    return CryptoError(absl::StrCat("filling in ", spec.common_name));
  }
  X509* signer = issuer == nullptr ? cert.get() : issuer;
  X509* c = cert.get();
  absl::Status s = absl::OkStatus();
  if (spec.ca) {
    s.Update(
        AddExtension(c, signer, NID_basic_constraints, "critical,CA:TRUE"));
    s.Update(
        AddExtension(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign"));
    s.Update(AddExtension(c, signer, NID_subject_key_identifier, "hash"));
  } else {
    s.Update(
        AddExtension(c, signer, NID_basic_constraints, "critical,CA:FALSE"));
    s.Update(AddExtension(c, signer, NID_key_usage,
                          "critical,digitalSignature,keyEncipherment"));
    s.Update(
        AddExtension(c, signer, NID_ext_key_usage, spec.extended_key_usage));
    s.Update(
        AddExtension(c, signer, NID_authority_key_identifier, "keyid:always"));
    if (!spec.subject_alt_names.empty()) {
      s.Update(AddExtension(c, signer, NID_subject_alt_name,
                            spec.subject_alt_names));
    }
  }
  if (!s.ok()) return s;
  if (X509_sign(c, issuer_key, EVP_sha256()) <= 0) {
    return CryptoError(absl::StrCat("signing ", spec.common_name));
  }
  return cert;
}

// PEM text of a certificate or (private_key) a PKCS#8 private key,
// unencrypted: the files' mode is what protects them.
absl::StatusOr<std::string> Pem(X509* cert, EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr) return CryptoError("allocating a memory BIO");
  const int ok = cert != nullptr
                     ? PEM_write_bio_X509(bio.get(), cert)
                     : PEM_write_bio_PrivateKey(bio.get(), key, nullptr,
                                                nullptr, 0, nullptr, nullptr);
  if (ok != 1) return CryptoError("writing PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);  // NOLINT
  if (size <= 0 || data == nullptr) return CryptoError("reading PEM");
  return std::string(data, static_cast<size_t>(size));
}

// Mode 600, atomically (WriteSecretFile adds the newline the PEM text
// already ends with, so it is stripped here).
absl::Status WritePem(const std::string& path, std::string pem) {
  while (!pem.empty() && pem.back() == '\n') pem.pop_back();
  return WriteSecretFile(path, pem);
}

// "DNS:a,IP:b,...": localhost and 127.0.0.1 first, then `extra`.
absl::StatusOr<std::string> SubjectAltNames(
    const std::vector<std::string>& extra) {
  std::vector<std::string> names = {"DNS:localhost", "IP:127.0.0.1"};
  for (const std::string& name : extra) {
    std::array<unsigned char, 16> address{};
    if (inet_pton(AF_INET, name.c_str(), address.data()) == 1 ||
        inet_pton(AF_INET6, name.c_str(), address.data()) == 1) {
      names.push_back(absl::StrCat("IP:", name));
      continue;
    }
    bool dns = !name.empty() && name.size() <= 253;
    for (const char c : name) {
      dns = dns && (absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                    c == '-' || c == '.');
    }
    if (!dns) {
      return absl::InvalidArgumentError(absl::StrCat(
          "not a DNS name or IP address for the server certificate: ",
          EscapeForMessage(name, 100)));
    }
    names.push_back(absl::StrCat("DNS:", name));
  }
  return absl::StrJoin(names, ",");
}

// kInvalidArgument unless `client` has a file name of letters, digits, '-'
// and '_' (other than the set's own files) and a URI of letters, digits and
// - . _ ~ : % (nothing OpenSSL's configuration syntax would split).
absl::Status CheckNamedClient(const NamedClient& client) {
  bool file_ok = !client.file.empty() && client.file.size() <= 64 &&
                 client.file != "ca" && client.file != "server" &&
                 client.file != "client";
  for (const char c : client.file) {
    file_ok = file_ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                          c == '-' || c == '_');
  }
  if (!file_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a named client certificate's file name must be 1-64 letters, "
        "digits, '-' and '_' other than ca, server and client, got '",
        EscapeForMessage(client.file, 100), "'"));
  }
  bool uri_ok =
      client.uri.find(':') != std::string::npos && client.uri.size() <= 1024;
  for (const char c : client.uri) {
    uri_ok = uri_ok &&
             (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
              c == '.' || c == '_' || c == '~' || c == ':' || c == '%');
  }
  if (!uri_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a URI of letters, digits and - . _ ~ : % for ", client.file,
        ".pem: '", EscapeForMessage(client.uri, 100), "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DevCertificates> MakeDevCertificates(
    const std::string& dir, const std::vector<std::string>& extra_names,
    int days, const std::vector<NamedClient>& named_clients) {
  if (days < 1) return absl::InvalidArgumentError("days must be >= 1");
  absl::StatusOr<std::string> alt_names = SubjectAltNames(extra_names);
  if (!alt_names.ok()) return alt_names.status();
  for (size_t i = 0; i < named_clients.size(); ++i) {
    if (absl::Status s = CheckNamedClient(named_clients[i]); !s.ok()) return s;
    for (size_t j = 0; j < i; ++j) {
      if (named_clients[j].file == named_clients[i].file) {
        return absl::InvalidArgumentError(
            absl::StrCat("two named client certificates in one file: ",
                         named_clients[i].file));
      }
    }
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", EscapeForMessage(dir, 200), ": ",
                     std::strerror(errno)));
  }
  absl::StatusOr<Pkey> ca_key = NewP256Key();
  if (!ca_key.ok()) return ca_key.status();
  absl::StatusOr<Cert> ca =
      Issue({"ristretto throw-away CA", /*ca=*/true, "", ""}, ca_key->get(),
            nullptr, ca_key->get(), days);
  if (!ca.ok()) return ca.status();

  struct Leaf {
    std::string name;
    CertSpec spec;
  };
  std::vector<Leaf> leaves = {
      // serverAuth and clientAuth: a learner is also the coordinator's client.
      {"server",
       {"ristretto server", false, "serverAuth,clientAuth", *alt_names}},
      {"client", {"ristretto client", false, "clientAuth", ""}},
  };
  for (const NamedClient& client : named_clients) {
    leaves.push_back({client.file,
                      {absl::StrCat("ristretto client ", client.file), false,
                       "clientAuth", absl::StrCat("URI:", client.uri)}});
  }
  DevCertificates out;
  out.ca_cert = dir + "/ca.pem";
  absl::StatusOr<std::string> ca_pem = Pem(ca->get(), nullptr);
  if (!ca_pem.ok()) return ca_pem.status();
  if (absl::Status s = WritePem(out.ca_cert, *ca_pem); !s.ok()) return s;
  for (const Leaf& leaf : leaves) {
    absl::StatusOr<Pkey> key = NewP256Key();
    if (!key.ok()) return key.status();
    absl::StatusOr<Cert> cert =
        Issue(leaf.spec, key->get(), ca->get(), ca_key->get(), days);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> cert_pem = Pem(cert->get(), nullptr);
    if (!cert_pem.ok()) return cert_pem.status();
    absl::StatusOr<std::string> key_pem = Pem(nullptr, key->get());
    if (!key_pem.ok()) return key_pem.status();
    const std::string cert_file = absl::StrCat(dir, "/", leaf.name, ".pem");
    const std::string key_file = absl::StrCat(dir, "/", leaf.name, ".key");
    if (absl::Status s = WritePem(key_file, *key_pem); !s.ok()) return s;
    if (absl::Status s = WritePem(cert_file, *cert_pem); !s.ok()) return s;
    if (leaf.name == "server") {
      out.server_cert = cert_file;
      out.server_key = key_file;
    } else if (leaf.name == "client") {
      out.client_cert = cert_file;
      out.client_key = key_file;
    } else {
      out.named.push_back({cert_file, key_file});
    }
  }
  return out;
}

}  // namespace ristretto
