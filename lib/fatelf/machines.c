/*
 * The machine and OS ABI vocabularies of target names: every e_machine
 * value the ELF gABI (and the registry that continued it) assigns, with a
 * short name people can type and a long description for listings, and the
 * EI_OSABI values. Numbers without a name still have one: "emN" and
 * "osabiN", so that any record can be named.
 *
 * Short names are lowercase, unique, and chosen so that they can never be
 * mistaken for another kind of field (a word size, a byte order, an osabi,
 * an alias such as "arm64" or "amd64", "recordN", "emN"...): the target
 * parser tries them first, so a clash would silently change a name's
 * meaning. The unit tests check this.
 */
#include <string.h>
#include <strings.h>

#include "fatelf.h"
#include "macro.h"

struct machine {
	uint16_t id;
	const char *name;
	const char *desc;
};

/* Sorted by number. Reserved and unassigned numbers are absent. */
static const struct machine machines[] = {
	{ 0, "none", "No machine" },
	{ 1, "m32", "AT&T WE 32100" },
	{ 2, "sparc", "SPARC" },
	{ 3, "i386", "Intel 80386" },
	{ 4, "m68k", "Motorola 68000" },
	{ 5, "m88k", "Motorola 88000" },
	{ 6, "iamcu", "Intel MCU" },
	{ 7, "i860", "Intel 80860" },
	{ 8, "mips", "MIPS I architecture" },
	{ 9, "s370", "IBM System/370 processor" },
	{ 10, "mips_rs3_le", "MIPS RS3000 little-endian" },
	{ 15, "parisc", "Hewlett-Packard PA-RISC" },
	{ 17, "vpp500", "Fujitsu VPP500" },
	{ 18, "sparc32plus", "Enhanced instruction set SPARC (v8plus)" },
	{ 19, "i960", "Intel 80960" },
	{ 20, "ppc", "PowerPC" },
	{ 21, "ppc64", "64-bit PowerPC" },
	{ 22, "s390", "IBM System/390 processor" },
	{ 23, "spu", "IBM SPU/SPC" },
	{ 36, "v800", "NEC V800" },
	{ 37, "fr20", "Fujitsu FR20" },
	{ 38, "rh32", "TRW RH-32" },
	{ 39, "rce", "Motorola RCE" },
	{ 40, "arm", "ARM 32-bit architecture (AArch32)" },
	{ 41, "alpha", "Digital Alpha" },
	{ 42, "sh", "Hitachi SH" },
	{ 43, "sparcv9", "SPARC Version 9" },
	{ 44, "tricore", "Siemens TriCore embedded processor" },
	{ 45, "arc", "Argonaut RISC Core, Argonaut Technologies Inc." },
	{ 46, "h8_300", "Hitachi H8/300" },
	{ 47, "h8_300h", "Hitachi H8/300H" },
	{ 48, "h8s", "Hitachi H8S" },
	{ 49, "h8_500", "Hitachi H8/500" },
	{ 50, "ia64", "Intel IA-64 processor architecture" },
	{ 51, "mips_x", "Stanford MIPS-X" },
	{ 52, "coldfire", "Motorola ColdFire" },
	{ 53, "m68hc12", "Motorola M68HC12" },
	{ 54, "mma", "Fujitsu MMA Multimedia Accelerator" },
	{ 55, "pcp", "Siemens PCP" },
	{ 56, "ncpu", "Sony nCPU embedded RISC processor" },
	{ 57, "ndr1", "Denso NDR1 microprocessor" },
	{ 58, "starcore", "Motorola Star*Core processor" },
	{ 59, "me16", "Toyota ME16 processor" },
	{ 60, "st100", "STMicroelectronics ST100 processor" },
	{ 61, "tinyj", "Advanced Logic Corp. TinyJ embedded processor family" },
	{ 62, "x86_64", "AMD x86-64 architecture" },
	{ 63, "pdsp", "Sony DSP Processor" },
	{ 64, "pdp10", "Digital Equipment Corp. PDP-10" },
	{ 65, "pdp11", "Digital Equipment Corp. PDP-11" },
	{ 66, "fx66", "Siemens FX66 microcontroller" },
	{ 67, "st9plus", "STMicroelectronics ST9+ 8/16 bit microcontroller" },
	{ 68, "st7", "STMicroelectronics ST7 8-bit microcontroller" },
	{ 69, "m68hc16", "Motorola MC68HC16 Microcontroller" },
	{ 70, "m68hc11", "Motorola MC68HC11 Microcontroller" },
	{ 71, "m68hc08", "Motorola MC68HC08 Microcontroller" },
	{ 72, "m68hc05", "Motorola MC68HC05 Microcontroller" },
	{ 73, "svx", "Silicon Graphics SVx" },
	{ 74, "st19", "STMicroelectronics ST19 8-bit microcontroller" },
	{ 75, "vax", "Digital VAX" },
	{ 76, "cris", "Axis Communications 32-bit embedded processor" },
	{ 77, "javelin", "Infineon Technologies 32-bit embedded processor" },
	{ 78, "firepath", "Element 14 64-bit DSP Processor" },
	{ 79, "zsp", "LSI Logic 16-bit DSP Processor" },
	{ 80, "mmix", "Donald Knuth's educational 64-bit processor" },
	{ 81, "huany", "Harvard University machine-independent object files" },
	{ 82, "prism", "SiTera Prism" },
	{ 83, "avr", "Atmel AVR 8-bit microcontroller" },
	{ 84, "fr30", "Fujitsu FR30" },
	{ 85, "d10v", "Mitsubishi D10V" },
	{ 86, "d30v", "Mitsubishi D30V" },
	{ 87, "v850", "NEC v850" },
	{ 88, "m32r", "Mitsubishi M32R" },
	{ 89, "mn10300", "Matsushita MN10300" },
	{ 90, "mn10200", "Matsushita MN10200" },
	{ 91, "pj", "picoJava" },
	{ 92, "openrisc", "OpenRISC 32-bit embedded processor" },
	{ 93, "arc_compact", "ARC International ARCompact processor" },
	{ 94, "xtensa", "Tensilica Xtensa Architecture" },
	{ 95, "videocore", "Alphamosaic VideoCore processor" },
	{ 96, "tmm_gpp", "Thompson Multimedia General Purpose Processor" },
	{ 97, "ns32k", "National Semiconductor 32000 series" },
	{ 98, "tpc", "Tenor Network TPC processor" },
	{ 99, "snp1k", "Trebia SNP 1000 processor" },
	{ 100, "st200", "STMicroelectronics ST200 microcontroller" },
	{ 101, "ip2k", "Ubicom IP2xxx microcontroller family" },
	{ 102, "max", "MAX Processor" },
	{ 103, "cr", "National Semiconductor CompactRISC microprocessor" },
	{ 104, "f2mc16", "Fujitsu F2MC16" },
	{ 105, "msp430", "Texas Instruments embedded microcontroller msp430" },
	{ 106, "blackfin", "Analog Devices Blackfin (DSP) processor" },
	{ 107, "se_c33", "S1C33 Family of Seiko Epson processors" },
	{ 108, "sep", "Sharp embedded microprocessor" },
	{ 109, "arca", "Arca RISC Microprocessor" },
	{ 110, "unicore", "Microprocessor series from PKU-Unity Ltd. and MPRC of Peking University" },
	{ 111, "excess", "eXcess: 16/32/64-bit configurable embedded CPU" },
	{ 112, "dxp", "Icera Semiconductor Inc. Deep Execution Processor" },
	{ 113, "altera_nios2", "Altera Nios II soft-core processor" },
	{ 114, "crx", "National Semiconductor CompactRISC CRX microprocessor" },
	{ 115, "xgate", "Motorola XGATE embedded processor" },
	{ 116, "c166", "Infineon C16x/XC16x processor" },
	{ 117, "m16c", "Renesas M16C series microprocessors" },
	{ 118, "dspic30f", "Microchip Technology dsPIC30F Digital Signal Controller" },
	{ 119, "ce", "Freescale Communication Engine RISC core" },
	{ 120, "m32c", "Renesas M32C series microprocessors" },
	{ 131, "tsk3000", "Altium TSK3000 core" },
	{ 132, "rs08", "Freescale RS08 embedded processor" },
	{ 133, "sharc", "Analog Devices SHARC family of 32-bit DSP processors" },
	{ 134, "ecog2", "Cyan Technology eCOG2 microprocessor" },
	{ 135, "score7", "Sunplus S+core7 RISC processor" },
	{ 136, "dsp24", "New Japan Radio (NJR) 24-bit DSP Processor" },
	{ 137, "videocore3", "Broadcom VideoCore III processor" },
	{ 138, "latticemico32", "RISC processor for Lattice FPGA architecture" },
	{ 139, "se_c17", "Seiko Epson C17 family" },
	{ 140, "ti_c6000", "The Texas Instruments TMS320C6000 DSP family" },
	{ 141, "ti_c2000", "The Texas Instruments TMS320C2000 DSP family" },
	{ 142, "ti_c5500", "The Texas Instruments TMS320C55x DSP family" },
	{ 143, "ti_arp32", "Texas Instruments Application Specific RISC Processor, 32bit fetch" },
	{ 144, "ti_pru", "Texas Instruments Programmable Realtime Unit" },
	{ 160, "mmdsp_plus", "STMicroelectronics 64bit VLIW Data Signal Processor" },
	{ 161, "cypress_m8c", "Cypress M8C microprocessor" },
	{ 162, "r32c", "Renesas R32C series microprocessors" },
	{ 163, "trimedia", "NXP Semiconductors TriMedia architecture family" },
	{ 164, "hexagon", "Qualcomm Hexagon (QDSP6) processor" },
	{ 165, "8051", "Intel 8051 and variants" },
	{ 166, "stxp7x", "STMicroelectronics STxP7x family of configurable and extensible RISC processors" },
	{ 167, "nds32", "Andes Technology compact code size embedded RISC processor family" },
	{ 168, "ecog1x", "Cyan Technology eCOG1X family" },
	{ 169, "maxq30", "Dallas Semiconductor MAXQ30 Core Micro-controllers" },
	{ 170, "ximo16", "New Japan Radio (NJR) 16-bit DSP Processor" },
	{ 171, "manik", "M2000 Reconfigurable RISC Microprocessor" },
	{ 172, "craynv2", "Cray Inc. NV2 vector architecture" },
	{ 173, "rx", "Renesas RX family" },
	{ 174, "metag", "Imagination Technologies META processor architecture" },
	{ 175, "mcst_elbrus", "MCST Elbrus general purpose hardware architecture" },
	{ 176, "ecog16", "Cyan Technology eCOG16 family" },
	{ 177, "cr16", "National Semiconductor CompactRISC CR16 16-bit microprocessor" },
	{ 178, "etpu", "Freescale Extended Time Processing Unit" },
	{ 179, "sle9x", "Infineon Technologies SLE9X core" },
	{ 180, "l10m", "Intel L10M" },
	{ 181, "k10m", "Intel K10M" },
	{ 183, "aarch64", "ARM 64-bit architecture (AArch64)" },
	{ 185, "avr32", "Atmel Corporation 32-bit microprocessor family" },
	{ 186, "stm8", "STMicroelectronics STM8 8-bit microcontroller" },
	{ 187, "tile64", "Tilera TILE64 multicore architecture family" },
	{ 188, "tilepro", "Tilera TILEPro multicore architecture family" },
	{ 189, "microblaze", "Xilinx MicroBlaze 32-bit RISC soft processor core" },
	{ 190, "cuda", "NVIDIA CUDA architecture" },
	{ 191, "tilegx", "Tilera TILE-Gx multicore architecture family" },
	{ 192, "cloudshield", "CloudShield architecture family" },
	{ 193, "corea_1st", "KIPO-KAIST Core-A 1st generation processor family" },
	{ 194, "corea_2nd", "KIPO-KAIST Core-A 2nd generation processor family" },
	{ 195, "arcv2", "Synopsys ARCompact V2 (ARCv2)" },
	{ 196, "open8", "Open8 8-bit RISC soft processor core" },
	{ 197, "rl78", "Renesas RL78 family" },
	{ 198, "videocore5", "Broadcom VideoCore V processor" },
	{ 199, "78kor", "Renesas 78KOR family" },
	{ 200, "56800ex", "Freescale 56800EX Digital Signal Controller (DSC)" },
	{ 201, "ba1", "Beyond BA1 CPU architecture" },
	{ 202, "ba2", "Beyond BA2 CPU architecture" },
	{ 203, "xcore", "XMOS xCORE processor family" },
	{ 204, "mchp_pic", "Microchip 8-bit PIC(r) family" },
	{ 205, "intelgt", "Intel Graphics Technology" },
	{ 210, "km32", "KM211 KM32 32-bit processor" },
	{ 211, "kmx32", "KM211 KMX32 32-bit processor" },
	{ 212, "kmx16", "KM211 KMX16 16-bit processor" },
	{ 213, "kmx8", "KM211 KMX8 8-bit processor" },
	{ 214, "kvarc", "KM211 KVARC processor" },
	{ 215, "cdp", "Paneve CDP architecture family" },
	{ 216, "coge", "Cognitive Smart Memory Processor" },
	{ 217, "cool", "Bluechip Systems CoolEngine" },
	{ 218, "norc", "Nanoradio Optimized RISC" },
	{ 219, "csr_kalimba", "CSR Kalimba architecture family" },
	{ 220, "z80", "Zilog Z80" },
	{ 221, "visium", "Controls and Data Services VISIUMcore processor" },
	{ 222, "ft32", "FTDI Chip FT32 high performance 32-bit RISC architecture" },
	{ 223, "moxie", "Moxie processor family" },
	{ 224, "amdgpu", "AMD GPU architecture" },
	{ 243, "riscv", "RISC-V" },
	{ 244, "lanai", "Lanai 32-bit processor" },
	{ 245, "ceva", "CEVA Processor Architecture Family" },
	{ 246, "ceva_x2", "CEVA X2 Processor Family" },
	{ 247, "bpf", "Linux BPF in-kernel virtual machine" },
	{ 248, "graphcore_ipu", "Graphcore Intelligent Processing Unit" },
	{ 249, "img1", "Imagination Technologies" },
	{ 250, "nfp", "Netronome Flow Processor" },
	{ 251, "ve", "NEC Vector Engine" },
	{ 252, "csky", "C-SKY processor family" },
	{ 253, "arc_compact3_64", "Synopsys ARCv2.3 64-bit" },
	{ 254, "mcs6502", "MOS Technology MCS 6502 processor" },
	{ 255, "arc_compact3", "Synopsys ARCv2.3 32-bit" },
	{ 256, "kvx", "Kalray VLIW core of the MPPA processor family" },
	{ 257, "65816", "WDC 65816/65C816" },
	{ 258, "loongarch", "LoongArch" },
	{ 259, "kf32", "ChipON KungFu32" },
	{ 260, "u16_u8core", "LAPIS nX-U16/U8" },
	{ 261, "tachyum", "Tachyum" },
	{ 262, "56800ef", "NXP 56800EF Digital Signal Controller (DSC)" },
};

/*
 * Spellings from the historical fatelf-* tools' machine table that differ
 * from the names above. They are accepted so that their command lines keep
 * working; a record is still printed with its name above.
 */
static const struct machine historical_machines[] = {
	{ 3, "386", NULL },
	{ 4, "68k", NULL },
	{ 5, "88k", NULL },
	{ 7, "860", NULL },
	{ 10, "mips-rs3", NULL },
	{ 15, "pa-risc", NULL },
	{ 19, "960", NULL },
	{ 46, "h8-300", NULL },
	{ 47, "h8-300h", NULL },
	{ 49, "h8-500", NULL },
	{ 51, "mipsx", NULL },
	{ 69, "68hc16", NULL },
	{ 70, "68hc11", NULL },
	{ 71, "68hc08", NULL },
	{ 72, "68hc05", NULL },
	{ 93, "arc_a5", NULL },
};

struct osabi {
	uint8_t id;
	const char *name;
};

/* EI_OSABI. 97 is named "armabi" because "arm" is the machine. */
static const struct osabi osabis[] = {
	{ 0, "sysv" },
	{ 1, "hpux" },
	{ 2, "netbsd" },
	{ 3, "linux" },
	{ 4, "hurd" },
	{ 6, "solaris" },
	{ 7, "aix" },
	{ 8, "irix" },
	{ 9, "freebsd" },
	{ 10, "tru64" },
	{ 11, "modesto" },
	{ 12, "openbsd" },
	{ 13, "openvms" },
	{ 14, "nsk" },
	{ 15, "aros" },
	{ 16, "fenixos" },
	{ 17, "cloudabi" },
	{ 18, "openvos" },
	{ 64, "arm_aeabi" },
	{ 97, "armabi" },
	{ 255, "standalone" },
};

static const struct machine *machine_lookup(uint16_t id)
{
	size_t lo = 0, hi = ARRAY_SIZE(machines);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (machines[mid].id == id)
			return &machines[mid];
		if (machines[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *fatelf_machine_name(uint16_t machine)
{
	const struct machine *m = machine_lookup(machine);

	return m ? m->name : NULL;
}

const char *fatelf_machine_desc(uint16_t machine)
{
	const struct machine *m = machine_lookup(machine);

	return m ? m->desc : NULL;
}

/*
 * Parses "<prefix>N": N plain decimal digits (no sign, no spaces) up to
 * max. Few digits are allowed so that a long run cannot overflow.
 */
static bool number_with_prefix(const char *s, const char *prefix, unsigned long max,
			       unsigned long *ret)
{
	size_t plen = strlen(prefix);
	unsigned long v = 0;
	size_t n = 0;

	if (strncasecmp(s, prefix, plen) != 0)
		return false;
	s += plen;
	for (; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 9)
			return false;
		v = v * 10 + (unsigned long)(s[n] - '0');
	}
	if (n == 0 || v > max)
		return false;
	*ret = v;
	return true;
}

int fatelf_machine_from_name(const char *name, uint16_t *ret)
{
	unsigned long v;

	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(machines); i++)
		if (strcasecmp(name, machines[i].name) == 0) {
			*ret = machines[i].id;
			return 0;
		}
	for (size_t i = 0; i < ARRAY_SIZE(historical_machines); i++)
		if (strcasecmp(name, historical_machines[i].name) == 0) {
			*ret = historical_machines[i].id;
			return 0;
		}
	if (number_with_prefix(name, "em", UINT16_MAX, &v)) {
		*ret = (uint16_t)v;
		return 0;
	}
	return -FATELF_E_TARGET_SYNTAX;
}

const char *fatelf_osabi_name(uint8_t osabi)
{
	for (size_t i = 0; i < ARRAY_SIZE(osabis); i++)
		if (osabis[i].id == osabi)
			return osabis[i].name;
	return NULL;
}

int fatelf_osabi_from_name(const char *name, uint8_t *ret)
{
	unsigned long v;

	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(osabis); i++)
		if (strcasecmp(name, osabis[i].name) == 0) {
			*ret = osabis[i].id;
			return 0;
		}
	/* GNU renamed ELFOSABI_LINUX to ELFOSABI_GNU; both mean 3. */
	if (strcasecmp(name, "gnu") == 0) {
		*ret = FATELF_OSABI_LINUX;
		return 0;
	}
	/* The historical tools' name for 5, which the gABI no longer assigns;
	 * such a record still prints as "osabi5". */
	if (strcasecmp(name, "86open") == 0) {
		*ret = 5;
		return 0;
	}
	if (number_with_prefix(name, "osabi", UINT8_MAX, &v)) {
		*ret = (uint8_t)v;
		return 0;
	}
	return -FATELF_E_TARGET_SYNTAX;
}
