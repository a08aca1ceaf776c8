import Foundation
import Testing

@Suite("Signed and encrypted archives")
struct BackupTrustTests {
    /// Exports u1 as tar.gz, grants premium until 9999 in its plans rows, re-hashes the manifest and
    /// either drops the signature or re-signs it with another key.
    private func forged(_ sandbox: Sandbox, resign: Bool) async throws -> String {
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "u1.tar.gz").status == 0)
        let name = resign ? "resigned.tar.gz" : "unsigned.tar.gz"
        try await sandbox.python(
            """
            import tarfile, io, json, hashlib, hmac, os, struct
            entries = {}
            order = []
            with tarfile.open('u1.tar.gz') as tar:
                for member in tar.getmembers():
                    entries[member.name] = tar.extractfile(member).read()
                    order.append(member.name)
            plans = [json.loads(line) for line in entries['data/plans/000001.ndjson'].decode().splitlines()]
            for plan in plans:
                plan['ends_at'] = '9999-12-31T00:00:00.000Z'
            entries['data/plans/000001.ndjson'] = ''.join(json.dumps(p) + '\\n' for p in plans).encode()
            header = json.loads(entries['header.json'])
            key = os.urandom(32)
            if \(resign ? "True" : "False"):
                header['signing_key_id'] = hashlib.sha256(key).hexdigest()[:16]
            else:
                header.pop('signing_key_id', None)
            entries['header.json'] = json.dumps(header).encode()
            manifest = json.loads(entries['manifest.json'])
            for entry in manifest['entries']:
                data = entries[entry['name']]
                entry['size'] = len(data)
                entry['sha256'] = hashlib.sha256(data).hexdigest()
            entries['manifest.json'] = json.dumps(manifest).encode()
            order.remove('signature.json')
            if \(resign ? "True" : "False"):
                message = b'guestmode-backup-signature-v2\\n'
                for part in (entries['header.json'], entries['manifest.json']):
                    message += struct.pack('>Q', len(part)) + part
                entries['signature.json'] = json.dumps({'algorithm': 'hmac-sha256', 'key_id': header['signing_key_id'],
                    'mac': hmac.new(key, message, hashlib.sha256).hexdigest()}).encode()
                order.append('signature.json')
            with tarfile.open('\(name)', 'w:gz') as tar:
                for entry in order:
                    info = tarfile.TarInfo(entry)
                    info.size = len(entries[entry])
                    tar.addfile(info, io.BytesIO(entries[entry]))
            """)
        return name
    }

    @Test(
        "an archive edited to grant premium until 9999 imports its records but not the plan, unless --trust-unsigned",
        arguments: [false, true])
    func entitlementEdit(resign: Bool) async throws {
        let sandbox = try await Sandbox.withBackupData()
        let archive = try await forged(sandbox, resign: resign)
        let verified = try await sandbox.run("backup", "verify", "--full", archive, "--json")
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.object["signature"] as? String == (resign ? "another-deployment" : "unsigned"))
        // The same deployment's second store: same key.
        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "fresh.sqlite").status == 0)
        try await sandbox.shell("cp guestmode.sqlite.key fresh.sqlite.key")
        let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", archive, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect((imported.object["skipped_tables"] as? [String])?.contains("plans") == true)
        #expect(imported.stderr.contains("plans") && imported.stderr.contains("--trust-unsigned"))
        #expect(try await sandbox.dump("fresh.sqlite", "plans") == "")
        #expect(try await sandbox.dump("fresh.sqlite", "records").contains("h1"))

        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "third.sqlite").status == 0)
        let trusted = try await sandbox.run(
            "--store", "third.sqlite", "backup", "import", archive, "--trust-unsigned", "--json")
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(try await sandbox.dump("third.sqlite", "plans").contains("9999-12-31"))
    }

    @Test("a signature that names this deployment's key but does not hold is a damaged archive")
    func badMAC() async throws {
        let sandbox = try await Sandbox.withBackupData()
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "u1.tar.gz").status == 0)
        try await sandbox.python(
            """
            import tarfile, io, json
            with tarfile.open('u1.tar.gz') as tar:
                entries = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
            with tarfile.open('bad.tar.gz', 'w:gz') as tar:
                for name, data in entries:
                    if name == 'signature.json':
                        signature = json.loads(data)
                        signature['mac'] = ('0' if signature['mac'][0] != '0' else '1') + signature['mac'][1:]
                        data = json.dumps(signature).encode()
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            """)
        #expect(try await sandbox.run("backup", "verify", "--full", "bad.tar.gz").status == 65)
        let before = try sandbox.snapshot()
        let imported = try await sandbox.run("backup", "import", "bad.tar.gz", "--on-conflict", "replace", "--json")
        #expect(imported.status == 65)
        #expect(imported.errorJSON["code"] as? String == "bad_signature")
        #expect(try sandbox.snapshot() == before)
    }

    @Test("encrypted archives: deployment key and passphrase round trips; a wrong passphrase or key exits 65")
    func encryption() async throws {
        let sandbox = try await Sandbox.withBackupData()
        try sandbox.write("pass", "correct horse battery staple\n")
        try sandbox.write("wrong", "incorrect\n")
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "key.gmbackup", "--encrypt").status == 0)
        #expect(
            try await sandbox.run(
                "backup", "export", "--all", "--out", "pass.zip", "--encrypt", "--passphrase-file", "pass"
            ).status == 0)
        let raw = try sandbox.read("key.gmbackup")
        #expect(Array(raw.prefix(8)) == [0x89, 0x47, 0x4D, 0x45, 0x4E, 0x43, 0x0D, 0x0A])
        #expect(try await sandbox.run("backup", "verify", "--full", "key.gmbackup").status == 0)
        #expect(
            try await sandbox.run("backup", "verify", "--full", "pass.zip", "--passphrase-file", "pass").status == 0)
        let inspected = try await sandbox.run("backup", "inspect", "pass.zip", "--passphrase-file", "pass", "--json")
        #expect(inspected.object["encrypted"] as? Bool == true)
        let wrong = try await sandbox.run("backup", "verify", "pass.zip", "--passphrase-file", "wrong", "--json")
        #expect(wrong.status == 65)
        #expect((wrong.stdout + wrong.stderr).contains("wrong key or passphrase"))
        #expect(try await sandbox.run("backup", "verify", "pass.zip").status == 64)

        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "fresh.sqlite").status == 0)
        let before = try sandbox.snapshot("fresh.sqlite")
        let otherKey = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", "key.gmbackup", "--json")
        #expect(otherKey.status == 65)
        #expect(otherKey.errorJSON["code"] as? String == "cannot_decrypt")
        #expect(try sandbox.snapshot("fresh.sqlite") == before)
        let withPassphrase = try await sandbox.run(
            "--store", "fresh.sqlite", "backup", "import", "pass.zip", "--passphrase-file", "pass", "--json")
        #expect(withPassphrase.status == 0, "\(withPassphrase.stderr)")
        #expect(withPassphrase.object["signature"] as? String == "another-deployment")
    }

    @Test(
        "an archive signed before backup key rotate imports as this deployment's after it, and after retire as another's"
    )
    func keyRotates() async throws {
        let sandbox = try await Sandbox.withBackupData()
        let first = try await sandbox.run("backup", "key", "list", "--json")
        let old = try #require((first.json as? [[String: Any]])?.first?["key_id"] as? String, "\(first.stdout)")
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "before.tar.gz").status == 0)
        #expect(try await sandbox.run("backup", "export", "u1", "--encrypt", "--out", "sealed.gmbackup").status == 0)

        let rotated = try await sandbox.run("backup", "key", "rotate", "--json")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let new = try #require(rotated.object["key_id"] as? String)
        #expect(new != old && rotated.object["state"] as? String == "current")
        let listed = try await sandbox.run("backup", "key", "list", "--json")
        #expect(
            (listed.json as? [[String: Any]])?.map { "\($0["key_id"] ?? "")=\($0["state"] ?? "")" } == [
                "\(old)=rotated", "\(new)=current",
            ], "\(listed.stdout)")
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "after.tar.gz").status == 0)
        let signedAfter = try await sandbox.run("backup", "verify", "after.tar.gz", "--json")
        #expect(signedAfter.object["signature_key_id"] as? String == new)
        let before = try await sandbox.run("backup", "import", "before.tar.gz", "--on-conflict", "replace", "--json")
        #expect(before.status == 0, "\(before.stderr)")
        #expect(before.object["signature"] as? String == "this-deployment", "signed by a rotated key: \(before.stdout)")
        // Signing keys of the token server sealed with the old key still open: it is only rotated.
        #expect(try await sandbox.run("serve", "signing-key", "rotate").status == 0)

        let current = try await sandbox.run("backup", "key", "retire", new)
        #expect(current.status == 14, "the current key is not retired: \(current.stderr)")
        let retired = try await sandbox.run("backup", "key", "retire", old, "--json")
        #expect(retired.status == 0 && retired.object["state"] as? String == "retired", "\(retired.stderr)")
        let afterRetire = try await sandbox.run("backup", "verify", "before.tar.gz", "--json")
        #expect(afterRetire.object["signature"] as? String == "another-deployment", "\(afterRetire.stdout)")
        let imported = try await sandbox.run(
            "backup", "import", "before.tar.gz", "--on-conflict", "replace", "--json")
        #expect(imported.object["signature"] as? String == "another-deployment", "\(imported.stdout)\(imported.stderr)")
        #expect(
            try await sandbox.run("backup", "verify", "after.tar.gz", "--json").object["signature"] as? String
                == "this-deployment")
        // A retired key still decrypts what it encrypted.
        let opened = try await sandbox.run("backup", "verify", "sealed.gmbackup", "--json")
        #expect(opened.status == 0 && opened.object["signature"] as? String == "another-deployment", "\(opened.stderr)")
        #expect(try await sandbox.run("backup", "key", "retire", "0123456789abcdef").status == 66)
    }

    @Test("a backup key that seals the store's current signing key is not retired before the signing key rotates")
    func keySealingTheSigningKeyStays() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        #expect(try await sandbox.run("serve", "signing-key", "rotate").status == 0)
        let old = try #require(
            (try await sandbox.run("backup", "key", "list", "--json").json as? [[String: Any]])?.last?["key_id"]
                as? String)
        #expect(try await sandbox.run("backup", "key", "rotate").status == 0)
        let refused = try await sandbox.run("backup", "key", "retire", old)
        #expect(refused.status == 14 && refused.stderr.contains("signing-key rotate"), "\(refused.stderr)")
        #expect(try await sandbox.run("serve", "signing-key", "rotate").status == 0)
        #expect(try await sandbox.run("backup", "key", "retire", old).status == 0)
        let server = try await Server.start(in: sandbox)
        #expect(try await server.signIn().1.isEmpty == false, "the server opens the key sealed with the new one")
        #expect(try await server.stop() == 0)
    }

    @Test("the key moves trust to a second store; a different key is not replaced without --force")
    func keyMoves() async throws {
        let sandbox = try await Sandbox.withBackupData()
        let mode =
            try FileManager.default.attributesOfItem(atPath: sandbox.path("guestmode.sqlite.key"))[.posixPermissions]
            as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "all.gmbackup").status == 0)
        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "fresh.sqlite").status == 0)
        let before = try await sandbox.run("--store", "fresh.sqlite", "backup", "verify", "all.gmbackup", "--json")
        #expect(before.object["signature"] as? String == "another-deployment")
        #expect(try await sandbox.run("backup", "key", "export", "--out", "moved.key").status == 0)
        let refused = try await sandbox.run("--store", "fresh.sqlite", "backup", "key", "import", "moved.key")
        #expect(refused.status == 14)
        #expect(
            try await sandbox.run("--store", "fresh.sqlite", "backup", "key", "import", "moved.key", "--force").status
                == 0)
        let after = try await sandbox.run("--store", "fresh.sqlite", "backup", "verify", "all.gmbackup", "--json")
        #expect(after.object["signature"] as? String == "this-deployment")
        let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", "all.gmbackup", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.object["skipped_tables"] as? [String] == [])
        // The key never shows up anywhere but key export.
        let key = try String(contentsOf: URL(fileURLWithPath: sandbox.path("guestmode.sqlite.key")), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!(imported.stdout + imported.stderr + after.stdout).contains(key))
    }

    @Test("two archives concatenated are refused", arguments: ["tar.zst", "tar.gz", "zip"])
    func concatenated(format: String) async throws {
        let sandbox = try await Sandbox.withBackupData()
        let archive = format == "tar.zst" ? "u1.gmbackup" : "u1.\(format)"
        let joined = "joined-\(archive)"
        #expect(try await sandbox.run("backup", "export", "u1", "--out", archive).status == 0)
        try await sandbox.shell("cat \(archive) \(archive) > \(joined)")
        #expect(try await sandbox.run("backup", "verify", joined).status == 65)
        let before = try sandbox.snapshot()
        #expect(try await sandbox.run("backup", "import", joined, "--on-conflict", "replace").status == 65)
        #expect(try sandbox.snapshot() == before)
    }

    @Test("a push removes the temporary files a killed push left behind")
    func stalePushTemporaries() async throws {
        let sandbox = try await Sandbox.withBackupData()
        try FileManager.default.createDirectory(atPath: sandbox.path("backups"), withIntermediateDirectories: false)
        // A pid far above pid_max: no process has it.
        try sandbox.write("backups/.u1.gmbackup.tmp-99999999-12345", "partial")
        try sandbox.write("backups/.u1.gmbackup.tmp-\(getpid())-1", "a live process's")
        try sandbox.write("backups/.notes.txt.tmp-99999999-1", "not ours")
        let pushed = try await sandbox.run("backup", "push", "--to", "backups", "--retry-now", "--json")
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect((pushed.object["removed_stale"] as? [String])?.count == 1)
        let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.path("backups")).sorted()
        #expect(left == [".notes.txt.tmp-99999999-1", ".u1.gmbackup.tmp-\(getpid())-1", "u1.gmbackup", "u2.gmbackup"])
    }
}
