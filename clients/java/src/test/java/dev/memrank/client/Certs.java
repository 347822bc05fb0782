package dev.memrank.client;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed certificate (SAN 127.0.0.1 and localhost) and its PKCS#8 key as PEM files,
 * made with the JDK's keytool: a peer trusts it by using the certificate as its CA file.
 */
record Certs(Path cert, Path key) {
  private static final String PASS = "memrank-test";

  /** One self-signed pair per name, made concurrently (one keytool process each). */
  static List<Certs> make(Path dir, String... names) throws IOException, InterruptedException {
    String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
    List<Process> running = new ArrayList<>();
    for (String name : names) {
      running.add(new ProcessBuilder(keytool, "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-genkeypair", "-alias", name, "-keyalg", "EC",
          "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA", "-dname", "CN=" + name,
          "-ext", "san=ip:127.0.0.1,dns:localhost", "-validity", "2", "-storetype", "PKCS12",
          "-keystore", dir.resolve(name + ".p12").toString(), "-storepass", PASS)
          .redirectErrorStream(true).redirectOutput(dir.resolve(name + ".log").toFile()).start());
    }
    List<Certs> out = new ArrayList<>();
    for (int i = 0; i < names.length; i++) {
      Process p = running.get(i);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("keytool failed: " + Files.readString(dir.resolve(names[i] + ".log")));
      }
      out.add(export(dir, names[i]));
    }
    return out;
  }

  private static Certs export(Path dir, String name) throws IOException {
    try (InputStream in = Files.newInputStream(dir.resolve(name + ".p12"))) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(in, PASS.toCharArray());
      Path cert = dir.resolve(name + ".pem");
      Path key = dir.resolve(name + ".key");
      Files.writeString(cert, pem("CERTIFICATE", ks.getCertificate(name).getEncoded()), StandardCharsets.US_ASCII);
      Files.writeString(key, pem("PRIVATE KEY", ks.getKey(name, PASS.toCharArray()).getEncoded()),
          StandardCharsets.US_ASCII);
      return new Certs(cert, key);
    } catch (GeneralSecurityException e) {
      throw new IOException(e);
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }
}
