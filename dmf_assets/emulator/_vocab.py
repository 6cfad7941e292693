"""Word lists and name/address builders for the emulated registry (docs/DOMAIN.md §2 "what it looks like").

Everything here is static data or a pure function of a `random.Random`, so the same seed always
builds the same names. Company and place names are invented from syllables and stems (a few stems
borrowed from the real rows); only the top applicants (docs/DOMAIN.md §2) and the 151 real seed rows carry
real names.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

SEED_FILE = Path(__file__).resolve().parent / "seeds" / "mfds_dmf_items_2026-09-24_applicant-filter.json"
SEED_OBSERVED_ON = "2026-09-24"


def _words(text: str) -> tuple[str, ...]:
    """A word list written as one block of text: the words, in order, split at whitespace."""
    return tuple(text.split())


def load_seed_rows() -> list[dict[str, str | None]]:
    """The 151 real API rows packaged with the emulator."""
    return json.loads(SEED_FILE.read_text(encoding="utf-8"))["items"]


# --- applicants --------------------------------------------------------------------------------

#: (name as written, records on ~2026-10-08, BIZRNO) — docs/DOMAIN.md §2 top applicants + the fixture group
TOP_APPLICANTS: tuple[tuple[str, int, str], ...] = (
    ("(주)삼오제약", 395, "1348107316"),
    ("(주)파마피아", 386, "2148834165"),
    ("에이징생명과학(주)", 278, "1218157902"),
    ("(주)국전", 274, "1288122675"),
    ("에이스바이오팜주식회사", 249, "3128117430"),
    ("대신무약(주)", 215, "2208106384"),
    ("화일약품(주)", 188, "1258108819"),
)
HIPL_NAME, HIPL_BIZRNO = "㈜하이플", "4338600179"
HIPL_LIFE_NAME, HIPL_LIFE_BIZRNO = "하이플생명과학(주)", "1338124994"
#: applicants found in the seed rows; generated records never use them before the seed date
SEED_APPLICANT_BIZRNOS = frozenset({HIPL_BIZRNO, HIPL_LIFE_BIZRNO})

_KO_STEMS = _words(
    """
    한 대 동 신 영 삼 일 세 유 태 광 진 성 우 보 명 경 국 제 휴 녹 부 정 인 화 서 미 지 하 안 청 원 상 혜 수 비 선 용 은 향 초 해 아 로 리 나 다 온 솔 빛
    """
)
_KO_FOREIGN = _words(
    """
    코리 바이 메디 파마 셀 젠 케어 엘 씨 알 넥 테크 라이프 에스 오 유니 글로 네오 프라 엔
    """
)
_KO_TRADES = _words(
    """
    제약 약품 바이오 팜 생명과학 케미칼 헬스케어 메디칼 무역 상사 화학 신약 바이오텍 약업 파마 사이언스 바이오팜 제약산업 켐 인터내셔널
    """
)


def _ko_stem(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(_KO_FOREIGN) + rng.choice(_KO_STEMS)
    n = 2 if rng.random() < 0.8 else 3
    return "".join(rng.choice(_KO_STEMS) for _ in range(n))


def korean_company_name(rng: random.Random) -> str:
    """An invented Korean company name with a legal form written one of the usual ways."""
    core = _ko_stem(rng) + rng.choice(_KO_TRADES)
    r = rng.random()
    if r < 0.42:
        return f"(주){core}"
    if r < 0.62:
        return f"{core}(주)"
    if r < 0.70:
        return f"{core}주식회사"
    if r < 0.77:
        return f"주식회사 {core}"
    if r < 0.85:
        return f"㈜{core}"
    if r < 0.90:
        return f"{core} 주식회사"
    if r < 0.94:
        return f"{core}유한회사" if rng.random() < 0.5 else f"유한회사 {core}"
    return core


def bizrno(rng: random.Random) -> str:
    """A 10-digit business registration number (3-2-5 digits, no separators)."""
    return f"{rng.randint(101, 899)}{rng.randint(81, 88)}{rng.randint(0, 99999):05d}"


# --- countries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Country:
    canonical: str
    entries: int  # site entries on ~2026-10-08 (docs/DOMAIN.md §2 for the top ten)
    english: str
    style: str  # name/address builder
    spellings: tuple[tuple[str, float], ...] = ()  # (spelling, share); default: canonical only

    def spell(self, rng: random.Random) -> str:
        if not self.spellings:
            return self.canonical
        r = rng.random()
        for name, share in self.spellings:
            if r < share:
                return name
            r -= share
        return self.canonical


#: 44 canonical countries + 5 variant spellings = 49 distinct country names (docs/DOMAIN.md §2).
#: Variant spellings come only from domain/countries.py COUNTRY_VARIANTS.
COUNTRIES: tuple[Country, ...] = (
    Country("인도", 3742, "India", "in"),
    Country("중국", 2883, "China", "cn", (("중화인민공화국", 0.004),)),
    Country("대한민국", 1307, "Korea", "kr", (("한국", 0.02),)),
    Country("이탈리아", 460, "Italy", "it", (("이태리", 0.015),)),
    Country("스페인", 253, "Spain", "es"),
    Country("독일", 192, "Germany", "de"),
    Country("일본", 180, "Japan", "jp"),
    Country("스위스", 167, "Switzerland", "ch"),
    Country("대만", 126, "Taiwan", "tw"),
    Country("프랑스", 111, "France", "fr"),
    Country("미국", 96, "USA", "us"),
    Country("영국", 58, "United Kingdom", "gb"),
    Country("아일랜드", 44, "Ireland", "gb"),
    Country("헝가리", 38, "Hungary", "eu"),
    Country("네덜란드", 34, "The Netherlands", "nl"),
    Country("체코", 30, "Czech Republic", "eu", (("체코공화국", 0.6),)),
    Country("이스라엘", 27, "Israel", "eu"),
    Country("슬로베니아", 24, "Slovenia", "eu"),
    Country("멕시코", 21, "Mexico", "es"),
    Country("캐나다", 19, "Canada", "us"),
    Country("포르투갈", 18, "Portugal", "es"),
    Country("벨기에", 17, "Belgium", "fr"),
    Country("폴란드", 16, "Poland", "eu"),
    Country("오스트리아", 15, "Austria", "de"),
    Country("덴마크", 13, "Denmark", "eu"),
    Country("핀란드", 11, "Finland", "eu"),
    Country("크로아티아", 10, "Croatia", "eu"),
    Country("스웨덴", 9, "Sweden", "eu"),
    Country("브라질", 8, "Brazil", "es"),
    Country("아르헨티나", 8, "Argentina", "es"),
    Country("싱가포르", 7, "Singapore", "gb"),
    Country("말레이시아", 8, "Malaysia", "gb", (("말레이지아", 0.5),)),
    Country("태국", 6, "Thailand", "gb"),
    Country("방글라데시", 6, "Bangladesh", "in"),
    Country("인도네시아", 5, "Indonesia", "gb"),
    Country("파키스탄", 5, "Pakistan", "in"),
    Country("우크라이나", 5, "Ukraine", "eu"),
    Country("그리스", 4, "Greece", "eu"),
    Country("러시아", 4, "Russia", "eu"),
    Country("튀르키예", 4, "Turkey", "eu"),
    Country("노르웨이", 3, "Norway", "eu"),
    Country("베트남", 3, "Vietnam", "gb"),
    Country("이집트", 3, "Egypt", "gb"),
    Country("호주", 3, "Australia", "gb"),
)
COUNTRY_BY_NAME: dict[str, Country] = {c.canonical: c for c in COUNTRIES}

#: spelling pairs a cosmetic re-typing may swap (both sides already in use, so the distinct count holds)
COSMETIC_COUNTRY_SWAPS: dict[str, str] = {
    "대한민국": "한국",
    "한국": "대한민국",
    "체코": "체코공화국",
    "체코공화국": "체코",
    "말레이시아": "말레이지아",
    "말레이지아": "말레이시아",
    "이탈리아": "이태리",
    "이태리": "이탈리아",
    "중국": "중화인민공화국",
    "중화인민공화국": "중국",
}

# --- manufacturer names ------------------------------------------------------------------------

_IN_STEMS = _words(
    """
    Aarav Abhay Aditya Ajanta Alivira Amsal Anuh Apex Aarna Bharat Bhavya Chemspec Deccan Devi Divya Emcure Gufic
    Hikal Indoco Jubil Kopran Lasa Macleo Mehta Nandini Navin Neuraxis Omkar Panacea Prudence Rajshree Ravi Sai
    Sanjivani Satyam Shilpa Siddharth Sree Sudarshan Surya Synbio Tirupati Triveni Unimark Vamsi Vasu Venkata
    Vijaya Vindhya Vishnu Wanbury Yashika Zenith Ganga Krishna Lakshmi Mahalaxmi Nakoda Symed Maithri Glochem
    Granu Virupaksha Aragen Morepen Solara Neuland Metrochem Hy-Gro Supriya Lee
    """
)
_IN_TRADES = (
    "Drugs",
    "Organics",
    "Lifesciences",
    "Life Sciences",
    "Pharma",
    "Pharmaceuticals",
    "Laboratories",
    "Chemicals",
    "Healthcare",
    "Remedies",
    "Synthesis",
    "Pharmachem",
    "Biotech",
    "Fine Chem",
    "Labs",
    "Speciality Chemicals",
    "Active Ingredients",
    "Chem",
)
_IN_LEGAL = ("Limited", "Private Limited", "Pvt. Ltd.", "Ltd.", "Pvt Ltd", "Ltd", "Private Ltd.")
_IN_PLACES = (
    ("Jeedimetla", "Medchal-Malkajgiri", "Telangana", "500 055"),
    ("Bollaram", "Sangareddy", "Telangana", "502 325"),
    ("Parawada", "Anakapalli", "Andhra Pradesh", "531 019"),
    ("Ankleshwar", "Bharuch", "Gujarat", "393 002"),
    ("Vapi", "Valsad", "Gujarat", "396 195"),
    ("Tarapur", "Palghar", "Maharashtra", "401 506"),
    ("Baddi", "Solan", "Himachal Pradesh", "173 205"),
    ("Pydibhimavaram", "Srikakulam", "Andhra Pradesh", "532 409"),
    ("Bommasandra", "Bengaluru", "Karnataka", "560 099"),
    ("Kurkumbh", "Pune", "Maharashtra", "413 802"),
    ("Dahej", "Bharuch", "Gujarat", "392 130"),
    ("Derabassi", "Mohali", "Punjab", "140 507"),
    ("Cuddalore", "Cuddalore", "Tamil Nadu", "607 005"),
    ("Nacharam", "Hyderabad", "Telangana", "500 076"),
)
_CN_PLACES = (
    ("Zhejiang", "Taizhou"),
    ("Zhejiang", "Shaoxing"),
    ("Zhejiang", "Hangzhou"),
    ("Zhejiang", "Linhai"),
    ("Jiangsu", "Changzhou"),
    ("Jiangsu", "Lianyungang"),
    ("Jiangsu", "Nantong"),
    ("Jiangsu", "Xuzhou"),
    ("Shandong", "Zibo"),
    ("Shandong", "Jinan"),
    ("Shandong", "Weifang"),
    ("Shandong", "Yantai"),
    ("Hubei", "Wuhan"),
    ("Hubei", "Yichang"),
    ("Hebei", "Shijiazhuang"),
    ("Sichuan", "Chengdu"),
    ("Jiangxi", "Nanchang"),
    ("Henan", "Zhengzhou"),
    ("Hunan", "Changsha"),
    ("Guangdong", "Shenzhen"),
    ("Guangdong", "Shaoguan"),
    ("Anhui", "Hefei"),
    ("Fujian", "Xiamen"),
    ("Liaoning", "Shenyang"),
    ("Chongqing", "Chongqing"),
    ("Shanghai", "Shanghai"),
    ("Tianjin", "Tianjin"),
    ("Shanxi", "Taiyuan"),
)
_CN_WORDS = _words(
    """
    Huahai Jingxin Tianyu Hisun Xianju Haizhou Liaoyuan Guobang Charioteer Zhenyuan Kangle Dongcheng Tianma Anhong
    Renan Haoran Hepalink Changshan Jincheng Xinhua Huasheng Hengrui Aoxiang Yongtai Tianxin Jiuzhou Huayi Lianhe
    Minsheng Baiyang Kangyu Ruibo Tiantai Huarun Yuxin Shenghua Jiuyuan Hongri Dongrui Xinyi Nhwa Dijia Zein Bosen
    Tianren Gedian Fushine
    """
)
_CN_TRADES = (
    "Pharmaceutical",
    "Pharmaceutical Group",
    "Biochemical Pharmaceutical",
    "Chemical",
    "Bio-Pharmaceutical",
    "Pharma",
    "Biotech",
    "Fine Chemical",
    "Medicine",
    "Biological Technology",
    "Pharmaceutical Chemical",
)
_CN_LEGAL = ("Co., Ltd.", "Co.,Ltd.", "Co., Ltd", "Co. Ltd.", "Co.,Ltd", "Co., Ltd.", "Co., Ltd.")
_EU_PREFIX = _words(
    """
    Chem Pharm Bio Syn Medi Nova Euro Alpha Terra Lumi Vita Cura Orga Poly Fine Neo Prima Gen Heli Astra Derm
    Farma Lab Quimi Inter
    """
)
_EU_SUFFIX = ("ika", "on", "ex", "ia", "os", "ine", "ara", "olab", "chem", "pharma", "synth", "tek", "ena", "ix")
_STYLE_TRADES = {
    "it": ("Farmaceutici", "Chimica", "Sintetici", "Pharma", "Industria Chimica", "Fine Chemicals"),
    "es": ("Química", "Farmacéutica", "Pharma", "Laboratorios", "Química Sintética"),
    "de": ("Pharma", "Chemie", "Feinchemie", "Arzneimittel", "Biotech"),
    "ch": ("Pharma", "Chemie", "Fine Chemicals", "Laboratories", "Biotech"),
    "fr": ("Pharma", "Chimie", "Laboratoires", "Synthèse", "Biotech"),
    "jp": ("Pharmaceutical", "Chemical", "Fine Chemical", "Seiyaku", "Kasei"),
    "tw": ("Pharmaceutical", "Chemical", "Biotech", "Pharma", "Chemical Synthesis & Biotech"),
    "us": ("Pharmaceuticals", "Chemicals", "Laboratories", "Pharma", "Life Sciences"),
    "gb": ("Pharmaceuticals", "Chemicals", "Laboratories", "Pharma", "Life Sciences"),
    "nl": ("Pharma", "Chemicals", "Fine Chemicals", "Biotech"),
    "eu": ("Pharma", "Pharmaceuticals", "Chemicals", "Laboratories", "Biotech"),
}
_STYLE_LEGAL = {
    "it": ("S.p.A.", "S.r.l.", "SpA", "S.R.L.", "s.r.l."),
    "es": ("S.A.", "S.L.", "S.L.U.", "S.A.U."),
    "de": ("GmbH", "AG", "GmbH & Co. KG"),
    "ch": ("AG", "SA", "Ltd."),
    "fr": ("SAS", "S.A.", "S.A.S."),
    "jp": ("Co., Ltd.", "Corporation", "Inc.", "Co.,Ltd."),
    "tw": ("Co., Ltd.", "Corporation", "Co.,Ltd."),
    "us": ("Inc.", "LLC", "Corporation", "Company"),
    "gb": ("Limited", "Ltd", "Ltd.", "Pte Ltd.", "Sdn. Bhd."),
    "nl": ("B.V.", "N.V."),
    "eu": ("Ltd.", "S.A.", "Inc.", "a.s.", "d.o.o.", "Zrt."),
}
_EU_STREETS = (
    "Via Dovaro",
    "Via della Vittoria",
    "Via E. H. Grieg",
    "Hauptstrasse",
    "Industriestrasse",
    "Rue de l'Industrie",
    "Calle Mayor",
    "Avenida de Europa",
    "Industrial Road",
    "Science Park",
    "Chemical Park",
    "Zona Industriale",
    "Polígono Industrial",
    "Parc Industriel",
    "Rheinstrasse",
    "Nihonbashi",
    "Tucheng Dist.",
    "Portage Road",
)
_EU_CITIES = (
    "Lonigo",
    "Mulazzano",
    "Saronno",
    "Santhià",
    "Barcelona",
    "Madrid",
    "León",
    "Frankfurt",
    "Bubendorf",
    "Basel",
    "Lyon",
    "Val de Reuil",
    "Tokyo",
    "Osaka",
    "Tainan",
    "Taipei",
    "Kalamazoo",
    "Cork",
    "Dublin",
    "Budapest",
    "Olomouc",
    "Ljubljana",
    "Tel Aviv",
    "Krakow",
    "Vienna",
    "Copenhagen",
    "Turku",
    "Zagreb",
)
_KO_PLACES = (
    ("경기도", "화성시", "향남읍 제약공단"),
    ("경기도", "안산시", "단원구 원시로"),
    ("충청북도", "청주시", "흥덕구 오송읍 오송생명"),
    ("충청북도", "음성군", "대소면 대풍산단로"),
    ("경기도", "평택시", "포승읍 포승공단로"),
    ("전라북도", "완주군", "봉동읍 완주산단"),
    ("경기도", "시흥시", "공단1대로"),
    ("충청남도", "아산시", "둔포면 아산밸리로"),
    ("인천광역시", "남동구", "남동서로"),
    ("경상북도", "칠곡군", "왜관읍 공단로"),
    ("경기도", "오산시", "가장산업서로"),
    ("충청북도", "진천군", "광혜원면 산단로"),
)


def manufacturer_name(rng: random.Random, style: str) -> str:
    if style == "in":
        return f"{rng.choice(_IN_STEMS)} {rng.choice(_IN_TRADES)} {rng.choice(_IN_LEGAL)}"
    if style == "cn":
        place = rng.choice(_CN_PLACES)[rng.randrange(2)]
        return f"{place} {rng.choice(_CN_WORDS)} {rng.choice(_CN_TRADES)} {rng.choice(_CN_LEGAL)}"
    if style == "kr":
        name = korean_company_name(rng)
        return name + (f" 제{rng.randint(1, 3)}공장" if rng.random() < 0.3 else "")
    stem = rng.choice(_EU_PREFIX) + rng.choice(_EU_SUFFIX)
    stem = stem.upper() if rng.random() < 0.15 else stem
    return f"{stem} {rng.choice(_STYLE_TRADES[style])} {rng.choice(_STYLE_LEGAL[style])}"


def _roman(rng: random.Random) -> str:
    # real addresses mix Roman-numeral look-alikes (Ⅰ Ⅱ Ⅲ) with ASCII ones
    n = rng.randint(1, 3)
    return ("Ⅰ", "Ⅱ", "Ⅲ")[n - 1] if rng.random() < 0.35 else "I" * n


def manufacturer_address(rng: random.Random, country: Country) -> str:
    style = country.style
    if style in ("in",):
        town, district, state, pin = rng.choice(_IN_PLACES)
        dash = "–" if rng.random() < 0.12 else "-"
        unit = f"Unit-{_roman(rng)}, " if rng.random() < 0.3 else ""
        phase = f", Phase-{_roman(rng)}" if rng.random() < 0.35 else ""
        tail = rng.choice((", India", ", India.", " India", ", INDIA."))
        if country.canonical != "인도":
            tail = f", {country.english}"
        return (
            f"{unit}Plot No. {rng.randint(1, 400)}{rng.choice(('', '/A', '/B', '-C'))}{phase}, {town}, "
            f"{district} District {dash} {pin}, {state}{tail}"
        )
    if style == "cn":
        prov, city = rng.choice(_CN_PLACES)
        road = rng.choice(_CN_WORDS)
        zone = rng.choice(
            (
                "Economic Development Zone",
                "Economic and Technological Development Zone",
                "Industrial Park",
                "High-Tech Industrial Development Zone",
                "Chemical Industry Park",
            )
        )
        tail = rng.choice(("China", "P.R. China", "P.R.China", "China.", "People’s Republic of China"))
        if country.canonical != "중국":
            tail = country.english
        return f"No. {rng.randint(1, 999)}, {road} Road, {city} {zone}, {city}, {prov} Province, {tail}"
    if style == "kr":
        do, si, road = rng.choice(_KO_PLACES)
        return f"{do} {si} {road}{rng.randint(1, 9)}길 {rng.randint(1, 150)}"
    street = rng.choice(_EU_STREETS)
    city = rng.choice(_EU_CITIES)
    return f"{street} {rng.randint(1, 200)}, {rng.randint(1000, 99999)} {city}, {country.english}"


ROLE_PREFIXES = ("[출발물질제조소]", "[중간체 제조소]", "[{ingr} 제조소]", "[‘{ingr}’ 제조소]", "[{ingr} 제조원] ")

# --- ingredients -------------------------------------------------------------------------------

#: base name | salt/hydrate forms ('' = the free form). Popular generics first.
_INGREDIENT_TABLE = """
아세트아미노펜|
이부프로펜|
덱시부프로펜|
나프록센|,나트륨
아세클로페낙|
디클로페낙|나트륨,칼륨,디에틸암모늄
세레콕시브|
멜록시캄|
록소프로펜|나트륨,나트륨수화물
플루르비프로펜|
케토프로펜|
잘토프로펜|
펠루비프로펜|
암로디핀|베실산염,말레산염,캄실산염,아디프산염
에스암로디핀|베실산염,베실산염이수화물
로사르탄|칼륨
발사르탄|
텔미사르탄|
올메사르탄|메독소밀
칸데사르탄|실렉세틸
이르베사르탄|
아토르바스타틴|칼슘삼수화물,칼슘
로수바스타틴|칼슘
심바스타틴|
피타바스타틴|칼슘
프라바스타틴|나트륨
에제티미브|
페노피브레이트|
메트포르민|염산염
글리메피리드|
시타글립틴|인산염수화물,염산염
리나글립틴|
빌다글립틴|
다파글리플로진|,프로판디올수화물
엠파글리플로진|
피오글리타존|염산염
아카르보스|
보글리보스|
클로피도그렐|황산수소염,베실산염
실로스타졸|
사르포그릴레이트|염산염
티카그렐러|
아픽사반|
리바록사반|
에독사반|토실산염수화물
와파린|나트륨
도네페질|염산염,염산염수화물
메만틴|염산염
리바스티그민|타르타르산수소염
갈란타민|브롬화수소산염
레비티라세탐|
토피라메이트|
프레가발린|
가바펜틴|
라모트리진|
옥스카르바제핀|
발프로산|나트륨
쿠에티아핀|푸마르산염
올란자핀|
리스페리돈|
아리피프라졸|
에스시탈로프람|옥살산염
설트랄린|염산염
파록세틴|염산염수화물,염산염
플루옥세틴|염산염
벤라팍신|염산염
둘록세틴|염산염
미르타자핀|
트라조돈|염산염
졸피뎀|타르타르산염
알프라졸람|
부프로피온|염산염
오메프라졸|,마그네슘
에스오메프라졸|마그네슘삼수화물,나트륨,스트론튬사수화물
란소프라졸|
덱스란소프라졸|
판토프라졸|나트륨수화물,나트륨세스키히드레이트
라베프라졸|나트륨
일라프라졸|
파모티딘|
라니티딘|염산염
니자티딘|
레바미피드|
모사프리드|시트르산염수화물
이토프리드|염산염
트리메부틴|말레산염
돔페리돈|,말레산염
레보설피리드|
우르소데옥시콜산|
세티리진|염산염
레보세티리진|염산염
펙소페나딘|염산염
로라타딘|
데스로라타딘|
에바스틴|
베포타스틴|베실산염,살리실산염
몬테루카스트|나트륨
프란루카스트|수화물
암브록솔|염산염
에르도스테인|
아세틸시스테인|
카르보시스테인|
클래리트로마이신|
아지트로마이신|수화물,이수화물
록시트로마이신|
에리트로마이신|,티오시아네이트
세파클러|수화물
세푸록심|악세틸
세픽심|수화물
세프디니르|
세프포독심|프록세틸
세프트리악손|나트륨
세포탁심|나트륨
세파졸린|나트륨
아목시실린|수화물
암피실린|나트륨,수화물
설박탐|나트륨
피페라실린|나트륨
메로페넴|수화물
이미페넴|수화물
반코마이신|염산염
레보플록사신|수화물
시프로플록사신|염산염수화물,염산염
목시플록사신|염산염
오플록사신|
플루코나졸|
이트라코나졸|
테르비나핀|염산염
케토코나졸|
아시클로버|
발라시클로비르|염산염
팜시클로비르|
엔테카비르|수화물
테노포비르|디소프록실푸마르산염,알라페나미드푸마르산염
오셀타미비르|인산염
메틸프레드니솔론|,아세포네이트
프레드니솔론|,아세테이트
덱사메타손|,나트륨포스페이트,아세테이트
베타메타손|,발레레이트,디프로피오네이트
트리암시놀론|아세토니드
부데소니드|
클로베타솔|프로피오네이트
베클로메타손|디프로피오네이트
모메타손|푸로산염
플루티카손|프로피오네이트,푸로에이트
히드로코르티손|,아세테이트
데속시메타손|
피나스테리드|
두타스테리드|
탐스로신|염산염
실로도신|
솔리페나신|숙신산염
미라베그론|
타다라필|
실데나필|시트르산염
알푸조신|염산염
레보티록신|나트륨
프로게스테론|
에스트라디올|,반수화물,발레레이트
노메게스트롤|아세테이트
레트로졸|
아나스트로졸|
타목시펜|시트르산염
비칼루타미드|
이마티닙|메실산염
카페시타빈|
젬시타빈|염산염
파클리탁셀|
도세탁셀|,삼수화물
이리노테칸|염산염,염산염삼수화물
옥살리플라틴|
페메트렉시드|이나트륨,이나트륨헵타수화물
보르테조밉|
류프로렐린|아세트산염,아세테이트
고세렐린|아세트산염
옥트레오티드|아세트산염
헤파린|나트륨
에녹사파린|나트륨
히알루론산|나트륨
콘드로이틴설페이트|나트륨
글루코사민|염산염,황산염
알렌드론산|나트륨,나트륨수화물
리세드론산|나트륨
이반드론산|나트륨
라록시펜|염산염
칼시트리올|
알파칼시돌|
콜레칼시페롤|
세벨라머|탄산염,염산염
시나칼세트|염산염
알로푸리놀|
페북소스타트|
콜히친|
메토트렉세이트|
히드록시클로로퀸|황산염
레플루노미드|
트라마돌|염산염
타펜타돌|염산염
옥시코돈|염산염
리도카인|염산염,염산염수화물
로피바카인|염산염수화물
부피바카인|염산염
세보플루란|
프로포폴|
미다졸람|
로쿠로늄|브롬화물
에페리손|염산염
슈도에페드린|염산염
덱스트로메토르판|브롬화수소산염
티오트로퓸|브롬화물
살메테롤|시나포산염
포르모테롤|푸마르산염이수화물
아젤라스틴|염산염
올로파타딘|염산염
브리모니딘|타르타르산염
라타노프로스트|
티몰롤|말레산염
도르졸라미드|염산염
네비보롤|염산염
비소프롤롤|푸마르산염
카르베딜롤|
아테놀롤|
프로프라놀롤|염산염
니페디핀|
니카르디핀|염산염
딜티아젬|염산염
베라파밀|염산염
라미프릴|
페린도프릴|에르부민,아르기닌
에날라프릴|말레산염
히드로클로로티아지드|
인다파미드|
푸로세미드|
스피로노락톤|
토르세미드|
아미오다론|염산염
디곡신|
이소소르비드|일질산염,이질산염
니코란딜|
트리메타지딘|염산염
글루타티온|,(환원형)
티옥트산|
벤포티아민|
니코틴산아미드|
피리독신|염산염
시아노코발라민|
엽산|
아스코르브산|
토코페롤|
탄산수소나트륨|
탄산칼슘|
산화마그네슘|
폴리카보필칼슘|
락툴로오스|
메살라진|
아고멜라틴|
에베로리무스|
루파타딘|푸마르산염
테고프라잔|
토파시티닙|시트르산염
바리시티닙|
피네레논|,베실산염
클라스코테론|
트리파로텐|
칼리디노게나제|
사이클로스포린|
무피로신|,칼슘
이오딕산올|
유리나스타틴|
펜톨라민|메실산염
파파베린|염산염
니세르골린|
도부타민|염산염
테오브로민|
아트로핀|황산염수화물
"""

#: plant extracts: the real registry writes extraction ratios with an arrow (look-alike quirk)
HERBAL_INGREDIENTS = (
    "후박75%에탄올 연조엑스(5→1)",
    "애엽95%에탄올 연조엑스(20→1)",
    "황련 건조엑스(5→1)",
    "은행엽 건조엑스(50→1)",
    "감초 건조엑스(4→1)",
)
#: salt forms the ingredient-correction edit may add (a substantive change of the ingredient name)
CORRECTION_SUFFIXES = ("수화물", "염산염", "나트륨", "이수화물", "무수물", "칼슘")


def ingredient_table() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = []
    for line in _INGREDIENT_TABLE.strip().splitlines():
        base, _, salts = line.partition("|")
        out.append((base, tuple(s for s in salts.split(",")) if salts else ("",)))
    return out
