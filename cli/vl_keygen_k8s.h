/*  vl_keygen_k8s: the certificates of a secured run as Kubernetes Secret
    manifests (`volley keygen --k8s-secrets DIR`). */
#ifndef VL_KEYGEN_K8S_H
#define VL_KEYGEN_K8S_H

/* Makes the broker's key pair and one per client (names[i] with roles[i];
   the learners' certificates carry policies when not NULL) and writes them
   into DIR (made, mode 0700) as Secret manifests, each mode 0600:
   volley-broker.yaml (broker.cert, broker.cert_secret), volley-allowed.yaml
   (every client's NAME.cert, public) and volley-NAME.yaml per client
   (NAME.cert, NAME.cert_secret, broker.cert). The keys are written nowhere
   else. Refuses, writing nothing, when any of those files exists or a name
   cannot name a Secret. Returns 0, 1 on a failure to write, 2 on a bad
   name. */
int vl_keygen_k8s(const char *dir, const char *const *names, const char *const *roles, int n,
                  const char *policies);

#endif
