#include "common/cert_identity.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/text_util.h"

namespace ristretto {
namespace {

struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct NamesFree {
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};

// auth::QuotedIds, or "none".
std::string Quoted(const std::vector<std::string>& ids) {
  return ids.empty() ? "none" : auth::QuotedIds(ids);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadCertificateUris(
    const std::string& cert_file) {
  std::unique_ptr<FILE, FileClose> f(std::fopen(cert_file.c_str(), "r"));
  if (f == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", EscapeForMessage(cert_file, 200)));
  }
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        EscapeForMessage(cert_file, 200), " holds no PEM certificate"));
  }
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> uris;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get());
       ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      static_cast<size_t>(ASN1_STRING_length(uri)));
  }
  return uris;
}

absl::StatusOr<std::string> ResolveIdFromCertificate(
    auth::Role role, const std::string& given_id, const std::string& cert_file,
    absl::string_view flag) {
  if (cert_file.empty()) return given_id;
  absl::StatusOr<std::vector<std::string>> uris =
      ReadCertificateUris(cert_file);
  if (!uris.ok()) return uris.status();
  const auth::CertificateNames names = auth::ParseCertificateNames(*uris);
  if (!names.any) return given_id;
  const std::vector<std::string>& ids =
      role == auth::Role::kLearner ? names.learners : names.actors;
  const std::string kind =
      role == auth::Role::kLearner ? "learner member id" : "actor id";
  if (!given_id.empty()) {
    if (std::find(ids.begin(), ids.end(), given_id) != ids.end()) {
      return given_id;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", EscapeForMessage(given_id, 80),
        "' is not named by the client certificate ",
        EscapeForMessage(cert_file, 200), " (it names ", kind, "s ",
        Quoted(ids), "), so the coordinator would refuse every call; give ",
        flag, " one of those, or leave it out when there is one"));
  }
  if (ids.size() == 1) return ids.front();
  return absl::InvalidArgumentError(absl::StrCat(
      "the client certificate ", EscapeForMessage(cert_file, 200), " names ",
      ids.size(), " ", kind, "s (", Quoted(ids), "): ",
      ids.empty() ? absl::StrCat("it is not a certificate for this role")
                  : absl::StrCat("choose one with ", flag)));
}

}  // namespace ristretto
