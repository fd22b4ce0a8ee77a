import { expect } from 'chai';
import {
  checkUrlForRegistration,
  isPublicAddress,
  type HostResolver,
} from '../../shared/http/address-policy';
import { tableResolver } from '../support/table-resolver';

const REFUSED_IPV4 = [
  '0.0.0.0', '0.1.2.3', // this network
  '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', // private
  '100.64.0.1', '100.127.255.254', // carrier-grade NAT
  '127.0.0.1', '127.255.255.254', // loopback
  '169.254.169.254', // link-local (cloud metadata)
  '192.0.0.1', '192.88.99.1', '240.0.0.1', // IETF protocol assignments, 6to4 relay, reserved
  '192.0.2.1', '198.51.100.7', '203.0.113.9', // documentation
  '198.18.0.1', '198.19.255.255', // benchmarking
  '224.0.0.1', '239.255.255.250', // multicast
  '255.255.255.255', // broadcast
  // Non-standard spellings of 127.0.0.1 and 10.0.0.1: only URL parsers expand them, never sockets or DNS.
  '2130706433', '0x7f.1', '0177.0.0.1', '127.1', '0x7f000001', '012.0.0.1',
];

const REFUSED_IPV6 = [
  '::', '::1', '[::1]', '0:0:0:0:0:0:0:1',
  'fe80::1', 'fe80::1%eth0', 'fec0::1', // link-local, scoped, site-local
  'fc00::1', 'fd12:3456:789a::1', // unique-local
  'ff02::1', 'ff05::1:3', // multicast
  '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:0.0.0.0', // IPv4-mapped
  '::127.0.0.1', '::8.8.8.8', // IPv4-compatible (deprecated; refused whatever it embeds)
  '::ffff:0:8.8.8.8', // SIIT IPv4-translated
  '64:ff9b::7f00:1', '64:ff9b::10.0.0.1', '64:ff9b::a9fe:a9fe', // NAT64 of non-public IPv4
  '64:ff9b:1::808:808', // local-use NAT64
  '2002:7f00:1::1', '2002:c0a8:101::1', '2002:a00:1::', // 6to4 of 127.0.0.1, 192.168.1.1, 10.0.0.1
  '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo, client 192.0.2.45 (RFC 4380 example)
  '2001:0:4136:e378:8000:63bf:f5ff:fffe', // Teredo, client 10.0.0.1
  '2001:0:c0a8:101:8000:63bf:f7f7:f7f7', // Teredo, server 192.168.1.1
  '2001:db8::1', '3fff::1', // documentation
  '2001:2::1', // benchmarking
  '100::1', '5f00::1', '2001:10::1', '2001::1', // discard, segment routing, ORCHID, TEREDO/IETF reserved
  '4000::1', 'e000::1', // outside global unicast 2000::/3
];

const PUBLIC = [
  '8.8.8.8', '1.1.1.1', '93.184.216.34', '11.0.0.1',
  '100.63.255.255', '100.128.0.1', // either side of 100.64/10
  '172.15.255.255', '172.32.0.1', // either side of 172.16/12
  '198.17.255.255', '198.20.0.1', // either side of 198.18/15
  '2606:4700:4700::1111', '2001:4860:4860::8888', '[2a00:1450:4001:80b::200e]',
  '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1',
  '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo: server 65.54.227.120, client 8.8.8.8
];

describe('shared/http/address-policy', () => {
  describe('isPublicAddress', () => {
    for (const ip of [...REFUSED_IPV4, ...REFUSED_IPV6]) {
      it(`refuses ${ip}`, () => expect(isPublicAddress(ip)).to.equal(false));
    }
    for (const ip of PUBLIC) {
      it(`accepts ${ip}`, () => expect(isPublicAddress(ip)).to.equal(true));
    }
    it('refuses text that is not an address', () => {
      for (const text of ['', 'localhost', 'example.com', '1.2.3.4.5', '::g', '[]', '256.0.0.1']) {
        expect(isPublicAddress(text), text).to.equal(false);
      }
    });
  });

  describe('checkUrlForRegistration', () => {
    const publicTable = {
      'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'api.customer.io': ['151.101.1.69'],
    };

    it('accepts an https URL whose name resolves only to public addresses, and returns the parsed URL', async () => {
      const resolve = tableResolver(publicTable);
      const check = await checkUrlForRegistration('https://hooks.example.com:8443/deskhand?x=1', { allowPrivate: false, resolve });
      expect(check.ok).to.equal(true);
      if (check.ok) expect(check.url.href).to.equal('https://hooks.example.com:8443/deskhand?x=1');
      expect(resolve.asked).to.deep.equal(['hooks.example.com']);
    });

    it('accepts a public literal address without resolving anything', async () => {
      const resolve = tableResolver({});
      for (const url of ['https://8.8.8.8/hook', 'https://[2606:4700:4700::1111]/hook']) {
        expect((await checkUrlForRegistration(url, { allowPrivate: false, resolve })).ok, url).to.equal(true);
      }
      expect(resolve.asked).to.deep.equal([]);
    });

    it('refuses plain http, other schemes and unparsable URLs', async () => {
      const resolve = tableResolver(publicTable);
      const cases: Array<[string, RegExp]> = [
        ['http://hooks.example.com/', /https/],
        ['ftp://hooks.example.com/', /https/],
        ['javascript:alert(1)', /https/],
        ['file:///etc/passwd', /https/],
        ['hooks.example.com/path', /valid/],
        ['', /valid/],
      ];
      for (const [url, reason] of cases) {
        const check = await checkUrlForRegistration(url, { allowPrivate: false, resolve });
        expect(check.ok, url).to.equal(false);
        if (!check.ok) expect(check.reason, url).to.match(reason);
      }
    });

    it('refuses credentials in the URL', async () => {
      const resolve = tableResolver(publicTable);
      for (const url of ['https://user:pass@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:pass@hooks.example.com/']) {
        const check = await checkUrlForRegistration(url, { allowPrivate: false, resolve });
        expect(check, url).to.deep.equal({ ok: false, reason: 'the URL must not contain a user name or password' });
      }
    });

    const LITERAL_URLS = [
      'https://127.0.0.1/', 'https://2130706433/', 'https://0177.0.0.1/', 'https://0x7f.1/', 'https://127.1/',
      'https://0x7f000001/', 'https://017700000001/', 'https://127.0.0.1./', 'https://%31%32%37.0.0.1/',
      'https://①②⑦.0.0.1/', 'https://0/', 'https://0.0.0.0:443/',
      'https://10.0.0.1/', 'https://012.0.0.1/', 'https://172.16.5.4/', 'https://192.168.0.1/',
      'https://169.254.169.254/latest/meta-data/', 'https://100.64.0.1/', 'https://198.18.0.1/', 'https://192.0.2.1/',
      'https://[::1]/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[::]/', 'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:7f00:1]/', 'https://[0:0:0:0:0:ffff:127.0.0.1]/', 'https://[::ffff:a9fe:a9fe]/',
      'https://[::127.0.0.1]/', 'https://[fd00::1]/', 'https://[fe80::1]/', 'https://[64:ff9b::a00:1]/',
      'https://[2002:7f00:1::1]/', 'https://[2001:db8::1]/',
    ];
    for (const url of LITERAL_URLS) {
      it(`refuses the literal address in ${url} without resolving`, async () => {
        const resolve = tableResolver({});
        const check = await checkUrlForRegistration(url, { allowPrivate: false, resolve });
        expect(check).to.deep.equal({ ok: false, reason: 'the host is a private, local or reserved address' });
        expect(resolve.asked).to.deep.equal([]);
      });
    }

    const LOCAL_NAMES = [
      'localhost', 'LOCALHOST.', 'ｌｏｃａｌｈｏｓｔ', 'app.localhost', 'printer.local', 'metadata.google.internal',
      'router.lan', 'nas.home.arpa', 'wiki.intranet', 'git.corp', 'db.localdomain', 'box.home', 'svc.private',
      '1.0.0.127.in-addr.arpa', 'hooks.test', 'hooks.invalid', 'hooks.example', 'abc.onion', 'x.alt',
      'metadata', 'kubernetes', // single labels: completed by the resolver's search domains
    ];
    for (const name of LOCAL_NAMES) {
      it(`refuses the local name ${name} without resolving`, async () => {
        const resolve = tableResolver({ [name]: ['93.184.216.34'] });
        const check = await checkUrlForRegistration(`https://${name}/hook`, { allowPrivate: false, resolve });
        expect(check).to.deep.equal({ ok: false, reason: 'the host is a local or internal name' });
        expect(resolve.asked).to.deep.equal([]);
      });
    }

    it('refuses a name if ANY of its answers is not public', async () => {
      const resolve = tableResolver({
        'rebind.example.com': ['93.184.216.34', '127.0.0.1'],
        'v6-loopback.example.com': ['93.184.216.34', '::1'],
        'mapped.example.com': ['::ffff:10.0.0.1'],
        'metadata.example.com': ['169.254.169.254'],
        'cgnat.example.com': ['100.100.100.200'],
        '127.0.0.1.nip.io': ['127.0.0.1'],
      });
      for (const host of ['rebind.example.com', 'v6-loopback.example.com', 'mapped.example.com', 'metadata.example.com', 'cgnat.example.com', '127.0.0.1.nip.io']) {
        const check = await checkUrlForRegistration(`https://${host}/`, { allowPrivate: false, resolve });
        expect(check, host).to.deep.equal({ ok: false, reason: 'the host name resolves to a private, local or reserved address' });
      }
    });

    it('refuses a name that does not resolve, resolves to nothing, or takes too long', async () => {
      const resolve = tableResolver({ 'empty.example.com': [] });
      for (const host of ['nowhere.example.com', 'empty.example.com']) {
        const check = await checkUrlForRegistration(`https://${host}/`, { allowPrivate: false, resolve });
        expect(check, host).to.deep.equal({ ok: false, reason: 'the host name does not resolve' });
      }
      const started = Date.now();
      const hanging: HostResolver = () => new Promise(() => undefined);
      const check = await checkUrlForRegistration('https://slow.example.com/', { allowPrivate: false, resolve: hanging, resolveTimeoutMs: 50 });
      expect(check).to.deep.equal({ ok: false, reason: 'the host name does not resolve' });
      expect(Date.now() - started).to.be.below(1000);
    });

    it('never puts resolved addresses in the reason', async () => {
      const resolve = tableResolver({ 'inside.example.com': ['10.1.2.3'] });
      const check = await checkUrlForRegistration('https://inside.example.com/', { allowPrivate: false, resolve });
      expect(JSON.stringify(check)).not.to.contain('10.1.2.3');
    });

    describe('with allowPrivate (development)', () => {
      it('accepts http, local names and private addresses without resolving', async () => {
        const resolve = tableResolver({});
        for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost:3000/', 'https://[::1]/', 'http://receiver.internal/', 'http://2130706433/']) {
          const check = await checkUrlForRegistration(url, { allowPrivate: true, resolve });
          expect(check.ok, url).to.equal(true);
        }
        expect(resolve.asked).to.deep.equal([]);
      });

      it('still refuses credentials and schemes other than http(s)', async () => {
        for (const url of ['http://u:p@localhost/', 'ftp://localhost/', 'file:///etc/passwd']) {
          expect((await checkUrlForRegistration(url, { allowPrivate: true })).ok, url).to.equal(false);
        }
      });
    });
  });
});
